/**
 * What the filter tells operators: the metrics SPI and its Micrometer and no-op implementations,
 * and {@code FilterLog}, the one log category every line of the filter goes to.
 */
package dev.idempotency.server.internal.telemetry;
