package dev.idempotency.kafka;

import io.micronaut.runtime.Micronaut;

/**
 * An application that only relays (its settings come as system properties), for tests that kill a
 * relay instance with {@code kill -9}: the PostgreSQL outbox, the Kafka sender, and an HTTP port
 * to tell it is up.
 */
public final class RelayChild {

    private RelayChild() {
    }

    public static void main(String[] args) {
        Micronaut.build(args).mainClass(RelayChild.class).start();
    }
}
