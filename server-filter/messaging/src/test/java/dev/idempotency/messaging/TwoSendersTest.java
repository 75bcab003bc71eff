package dev.idempotency.messaging;

import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.exceptions.ConfigurationException;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Two broker modules on one classpath, both enabled (RabbitMQ's and Kafka's, say): the relay sends
 * to one broker, so the startup fails in the library's words instead of every relay pass failing
 * on the bean lookup; disabling one, or relaying nowhere, starts.
 */
class TwoSendersTest {

    private static final String TWO = "test.two-senders";

    @Singleton
    @Requires(property = TWO)
    static final class FirstSender implements MessageSender {
        @Override
        public CompletionStage<List<String>> send(List<OutboxRecord> messages) {
            return CompletableFuture.completedFuture(messages.stream().map(m -> (String) null).toList());
        }
    }

    @Singleton
    @Requires(property = TWO)
    @Requires(property = "test.second-sender", notEquals = "false")
    static final class SecondSender implements MessageSender {
        @Override
        public CompletionStage<List<String>> send(List<OutboxRecord> messages) {
            return CompletableFuture.completedFuture(messages.stream().map(m -> (String) null).toList());
        }
    }

    @Test
    @DisplayName("two senders and a relay: a startup error that names both and says what to do")
    void refusedAtStartup() {
        assertThatThrownBy(() -> ApplicationContext.run(Map.of(TWO, "true")).close())
            .hasRootCauseInstanceOf(io.micronaut.context.exceptions.NonUniqueBeanException.class)
            .satisfies(e -> assertThat(causeOfType(e)).isNotNull().satisfies(c -> assertThat(c.getMessage())
                .contains("2 broker modules", "FirstSender", "SecondSender", "idempotency.kafka.enabled=false",
                    "idempotency.outbox.relay-enabled=false")));
    }

    @Test
    @DisplayName("one sender, or no relay on this instance: starts")
    void oneSenderOrNoRelay() {
        try (ApplicationContext ctx = ApplicationContext.run(Map.of(TWO, "true", "test.second-sender", "false"))) {
            assertThat(ctx.getBeansOfType(MessageSender.class)).hasSize(1);
        }
        try (ApplicationContext ctx = ApplicationContext.run(Map.of(TWO, "true",
            "idempotency.outbox.relay-enabled", "false"))) {
            assertThat(ctx.getBeansOfType(MessageSender.class)).hasSize(2);
        }
    }

    private static ConfigurationException causeOfType(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ConfigurationException c) {
                return c;
            }
        }
        return null;
    }
}
