package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.DefaultOutbox;
import dev.idempotency.messaging.internal.MicrometerMessagingMetrics;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.MutableClock;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT M7: what the messaging half reports to Micrometer: deliveries by consumer and outcome
 * (processed, duplicate, requeued, retried, dead-lettered), messages added to the outbox and
 * relayed by result, and the outbox's depth and lag as gauges.
 */
class MessagingMetricsTest {

    private final MutableClock clock = new MutableClock();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerMessagingMetrics metrics = new MicrometerMessagingMetrics(registry);
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private double deliveries(String outcome) {
        var counter = registry.find("idempotency.deliveries").tag("consumer", "ledger").tag("outcome", outcome).counter();
        return counter == null ? 0 : counter.count();
    }

    private static ReceivedMessage message(String id, int attempt) {
        return new ReceivedMessage(id, "{}".getBytes(StandardCharsets.UTF_8), "application/json", Map.of(), "ledger",
            "payment.captured", attempt > 0, attempt);
    }

    @Test
    @DisplayName("M7: deliveries are counted by consumer and outcome")
    void deliveriesByOutcome() throws Exception {
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock, 1000);
        IdempotentConsumer consumer = new IdempotentConsumer(ConsumerSettings.of("ledger").withMaxAttempts(2), store,
            timer, metrics);
        MessageHandler ok = m -> CompletableFuture.completedFuture(null);
        MessageHandler failing = m -> CompletableFuture.failedFuture(new IllegalStateException("declined"));
        consumer.process(message("a", 0), ok).toCompletableFuture().get(5, TimeUnit.SECONDS);
        consumer.process(message("a", 0), ok).toCompletableFuture().get(5, TimeUnit.SECONDS);
        consumer.process(message("b", 0), failing).toCompletableFuture().get(5, TimeUnit.SECONDS);
        consumer.process(message("b", 1), failing).toCompletableFuture().get(5, TimeUnit.SECONDS);
        CountDownLatch entered = new CountDownLatch(1);
        consumer.process(message("c", 0), m -> {
            entered.countDown();
            return new CompletableFuture<>(); // still running
        });
        assertThat(entered.await(5, TimeUnit.SECONDS)).isTrue();
        consumer.process(message("c", 0), ok).toCompletableFuture().get(5, TimeUnit.SECONDS);

        assertThat(deliveries("processed")).isEqualTo(1);
        assertThat(deliveries("duplicate")).isEqualTo(1);
        assertThat(deliveries("retried")).isEqualTo(1);
        assertThat(deliveries("dead-lettered")).isEqualTo(1);
        assertThat(deliveries("requeued")).isEqualTo(1);
    }

    @Test
    @DisplayName("M7: the outbox counts what it adds and relays, and shows its depth and lag until the broker confirms")
    void outboxCountersAndGauges() {
        InMemoryOutboxStore store = new InMemoryOutboxStore(1000);
        OutboxTest.Broker broker = new OutboxTest.Broker();
        OutboxConfigurationProperties config = new OutboxConfigurationProperties();
        OutboxRelay relay = new OutboxRelay(store, OutboxTest.provider(broker), config, clock, metrics);
        DefaultOutbox outbox = new DefaultOutbox(store, relay, clock, metrics);
        metrics.watch(store, clock); // what the relay does when the application starts

        outbox.publish("m1", null, OutgoingMessage.json("payments", "payment.captured", "{\"n\":1}"));
        outbox.publish("m1", null, OutgoingMessage.json("payments", "payment.captured", "{\"n\":1}"));
        outbox.publish("m2", null, OutgoingMessage.json("payments", "payment.captured", "{\"n\":2}"));
        assertThat(registry.get("idempotency.outbox.published").tag("result", "added").counter().count()).isEqualTo(2);
        assertThat(registry.get("idempotency.outbox.published").tag("result", "duplicate").counter().count()).isEqualTo(1);

        broker.unreachable = true;
        relay.relay();
        clock.advance(Duration.ofSeconds(30));
        assertThat(registry.get("idempotency.outbox.depth").gauge().value()).isEqualTo(2);
        assertThat(registry.get("idempotency.outbox.lag").gauge().value()).isGreaterThanOrEqualTo(30);
        assertThat(registry.get("idempotency.outbox.relayed").tag("result", "failed").counter().count()).isEqualTo(2);

        broker.unreachable = false;
        relay.relay();
        assertThat(registry.get("idempotency.outbox.relayed").tag("result", "confirmed").counter().count()).isEqualTo(2);
        assertThat(registry.get("idempotency.outbox.depth").gauge().value()).isZero();
        assertThat(registry.get("idempotency.outbox.lag").gauge().value()).isZero();
    }
}
