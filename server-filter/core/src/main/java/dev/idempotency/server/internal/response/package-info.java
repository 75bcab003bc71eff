/**
 * Responses: {@code ResponseCapture} takes the bytes the route's response is written as (encoded
 * once through the application's codecs, streamed bodies included) so a replay is byte for byte
 * the same; {@code Responses} builds the problem responses (S20) and replays.
 */
package dev.idempotency.server.internal.response;
