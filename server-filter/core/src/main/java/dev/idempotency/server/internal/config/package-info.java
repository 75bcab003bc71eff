/**
 * Wiring: which store the filter uses ({@code StoreSelection}, one rule, checked at startup), the
 * default {@link java.time.Clock}, and the adapter that runs a blocking store on an executor.
 */
package dev.idempotency.server.internal.config;
