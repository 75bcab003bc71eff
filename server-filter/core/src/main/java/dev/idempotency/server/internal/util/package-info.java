/** Small helpers every layer may use; nothing here depends on any other package of the filter. */
package dev.idempotency.server.internal.util;
