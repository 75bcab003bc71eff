/**
 * Publishes the Idempotency-Key policy in the OpenAPI document micronaut-openapi generates
 * (CONTRACT S21). Put {@code dev.idempotency:idempotency-openapi} on the annotation processor
 * path next to {@code io.micronaut.openapi:micronaut-openapi}; it is never a runtime dependency,
 * and the application's code needs nothing from it. Every {@code @Idempotent} operation then
 * declares the key header, the filter's problem responses and an {@code x-idempotency}
 * extension; see {@link dev.idempotency.openapi.IdempotencyOpenApiVisitor} for exactly what.
 */
package dev.idempotency.openapi;
