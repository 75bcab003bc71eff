package dev.idempotency.examples.gateway;

import io.micronaut.runtime.Micronaut;

/**
 * Starts the card gateway of the payments example on port 8090 ({@code GATEWAY_PORT} or
 * {@code -Dmicronaut.server.port} to change it). The payments service charges cards through it
 * with the client SDK ({@code payments.gateway.url}).
 */
public final class GatewayApplication {

    private GatewayApplication() {
    }

    /**
     * @param args command line arguments, passed to Micronaut
     */
    public static void main(String[] args) {
        Micronaut.run(GatewayApplication.class, args);
    }
}
