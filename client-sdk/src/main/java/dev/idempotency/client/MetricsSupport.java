package dev.idempotency.client;

/** Hands the application's meter registry to the clients the factory makes, when there is one. */
interface MetricsSupport {

    void configure(IdempotentClientConfig.Builder builder);
}
