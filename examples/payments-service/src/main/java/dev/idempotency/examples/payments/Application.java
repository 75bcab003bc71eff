package dev.idempotency.examples.payments;

import io.micronaut.runtime.Micronaut;

/**
 * Starts the payments example on port 8080 (override with {@code MICRONAUT_SERVER_PORT} or
 * {@code -Dmicronaut.server.port}). The Idempotency-Key filter comes with its in-memory store,
 * so nothing else needs to run.
 */
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
