package dev.idempotency.examples.payments;

import io.micronaut.runtime.Micronaut;
import io.swagger.v3.oas.annotations.OpenAPIDefinition;
import io.swagger.v3.oas.annotations.info.Info;

/**
 * Starts the payments example on port 8080 (override with {@code MICRONAUT_SERVER_PORT} or
 * {@code -Dmicronaut.server.port}). The Idempotency-Key filter comes with its in-memory store,
 * so nothing else needs to run. Its OpenAPI document, generated while compiling, is served at
 * {@code /swagger/payments-1.0.yml}.
 */
@OpenAPIDefinition(info = @Info(
    title = "Payments",
    version = "1.0",
    description = "A payments API whose writes are protected by the Idempotency-Key filter: every"
        + " operation that changes state takes an Idempotency-Key header and answers a retry with the"
        + " first result (x-idempotency on each operation states the policy)."))
public final class Application {

    private Application() {
    }

    /**
     * @param args command line arguments, passed to Micronaut
     */
    public static void main(String[] args) {
        Micronaut.run(Application.class, args);
    }
}
