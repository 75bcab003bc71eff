package dev.idempotency.kafka;

import dev.idempotency.messaging.MessageSender;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.runtime.Micronaut;
import jakarta.inject.Singleton;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An application that only relays (its settings come as system properties), for tests that kill a
 * relay instance with {@code kill -9}: the PostgreSQL outbox, the Kafka sender, and an HTTP port
 * to tell it is up. With {@code relay-child.hold-batch=N} and {@code relay-child.marker=FILE}, its
 * N-th batch, once the broker confirmed it, is written to FILE (one message id per line) and never
 * reported back to the relay: the instance is then exactly where a crash sends a batch twice,
 * confirmed by the broker and not marked sent, for as long as the test needs to kill it there.
 */
public final class RelayChild {

    private RelayChild() {
    }

    public static void main(String[] args) {
        Micronaut.build(args).mainClass(RelayChild.class).start();
    }

    /** Wraps the broker module's sender to hold the configured batch after its confirmation. */
    @Singleton
    @Requires(property = "relay-child.hold-batch")
    static final class HoldOneBatch implements BeanCreatedEventListener<MessageSender> {
        private final int batch;
        private final Path marker;
        private final AtomicInteger sent = new AtomicInteger();

        HoldOneBatch(@Value("${relay-child.hold-batch}") int batch, @Value("${relay-child.marker}") String marker) {
            this.batch = batch;
            this.marker = Path.of(marker);
        }

        @Override
        public MessageSender onCreated(BeanCreatedEvent<MessageSender> event) {
            MessageSender real = event.getBean();
            return messages -> {
                CompletionStage<List<String>> outcomes = real.send(messages);
                if (sent.incrementAndGet() != batch) {
                    return outcomes;
                }
                return outcomes.thenCompose(o -> {
                    List<String> confirmed = new ArrayList<>();
                    for (int i = 0; i < messages.size(); i++) {
                        if (o.get(i) == null) {
                            confirmed.add(messages.get(i).messageId());
                        }
                    }
                    write(confirmed);
                    return new CompletableFuture<>(); // never answered: the relay waits until it dies
                });
            };
        }

        private void write(List<String> ids) {
            try {
                Path tmp = Files.createTempFile(marker.toAbsolutePath().getParent(), "held", ".tmp");
                Files.write(tmp, ids);
                Files.move(tmp, marker, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
