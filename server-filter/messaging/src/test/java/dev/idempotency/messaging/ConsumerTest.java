package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.NoopMessagingMetrics;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The idempotent consumer's decisions (CONTRACT M4) on the in-memory store; the RabbitMQ module
 * runs them against a real broker on every store.
 */
class ConsumerTest {

    private final MutableClock clock = new MutableClock();
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock, 10_000);
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final AtomicInteger runs = new AtomicInteger();
    private final IdempotentConsumer consumer = new IdempotentConsumer(ConsumerSettings.of("ledger").withMaxAttempts(3),
        store, timer, new NoopMessagingMetrics());

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private static ReceivedMessage message(String id, String body, int attempt) {
        return new ReceivedMessage(id, body.getBytes(StandardCharsets.UTF_8), "application/json", Map.of(), "ledger",
            "payment.captured", attempt > 0, attempt);
    }

    private Disposition process(ReceivedMessage m, MessageHandler handler) {
        return consumer.process(m, handler).toCompletableFuture().orTimeout(10, TimeUnit.SECONDS).join();
    }

    private final MessageHandler counting = m -> {
        runs.incrementAndGet();
        return CompletableFuture.completedFuture(null);
    };

    @Test
    @DisplayName("M4: a message is processed once; its redeliveries are acknowledged without running the handler")
    void once() {
        assertThat(process(message("m1", "{}", 0), counting)).isEqualTo(new Disposition.Ack(DeliveryOutcome.PROCESSED));
        assertThat(process(message("m1", "{}", 0), counting)).isEqualTo(new Disposition.Ack(DeliveryOutcome.DUPLICATE));
        assertThat(process(message("m1", "{}", 0), counting)).isEqualTo(new Disposition.Ack(DeliveryOutcome.DUPLICATE));
        assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("M4: a failing handler releases the id: the message comes back, counted, and is dead-lettered with"
        + " the reason after max-attempts")
    void failuresThenDeadLetter() {
        MessageHandler failing = m -> {
            runs.incrementAndGet();
            return CompletableFuture.failedFuture(new IllegalStateException("card declined by the bank"));
        };
        Disposition first = process(message("m2", "{}", 0), failing);
        assertThat(first).isInstanceOfSatisfying(Disposition.Retry.class, r -> {
            assertThat(r.counted()).isTrue();
            assertThat(r.reason()).contains("card declined");
            assertThat(r.delay()).isEqualTo(ConsumerSettings.DEFAULT_RETRY_DELAY);
        });
        assertThat(process(message("m2", "{}", 1), failing)).isInstanceOf(Disposition.Retry.class);
        assertThat(process(message("m2", "{}", 2), failing)).isInstanceOfSatisfying(Disposition.DeadLetter.class,
            d -> assertThat(d.reason()).contains("3 times").contains("card declined"));
        assertThat(runs).hasValue(3);
        // released each time: a later, manual redelivery from the dead-letter queue still runs it
        assertThat(process(message("m2", "{}", 0), counting)).isEqualTo(new Disposition.Ack(DeliveryOutcome.PROCESSED));
    }

    @Test
    @DisplayName("M8: a failing handler's retries back off: retry-delay, doubled after each failure, capped at"
        + " retry-delay-max; a cap at or below retry-delay keeps it fixed")
    void retriesBackOff() {
        ConsumerSettings settings = ConsumerSettings.of("ledger").withRetryDelay(Duration.ofSeconds(1))
            .withRetryDelayMax(Duration.ofSeconds(3)).withMaxAttempts(6);
        IdempotentConsumer backingOff = new IdempotentConsumer(settings, store, timer, new NoopMessagingMetrics());
        MessageHandler failing = m -> CompletableFuture.failedFuture(new IllegalStateException("the ledger is busy"));
        List<Duration> waits = new ArrayList<>();
        for (int attempt = 0; attempt < 5; attempt++) {
            Disposition d = backingOff.process(message("m-backoff", "{}", attempt), failing).toCompletableFuture()
                .orTimeout(10, TimeUnit.SECONDS).join();
            assertThat(d).isInstanceOf(Disposition.Retry.class);
            waits.add(((Disposition.Retry) d).delay());
        }
        assertThat(waits).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(3),
            Duration.ofSeconds(3), Duration.ofSeconds(3));
        assertThat(backingOff.process(message("m-backoff", "{}", 5), failing).toCompletableFuture().join())
            .isInstanceOf(Disposition.DeadLetter.class);

        assertThat(ConsumerSettings.of("d").retryDelay(1)).isEqualTo(Duration.ofSeconds(5));
        assertThat(ConsumerSettings.of("d").retryDelay(4)).isEqualTo(Duration.ofSeconds(30));
        ConsumerSettings fixed = ConsumerSettings.of("f").withRetryDelay(Duration.ofMillis(500))
            .withRetryDelayMax(Duration.ofMillis(100));
        assertThat(fixed.retryDelay(1)).isEqualTo(Duration.ofMillis(500));
        assertThat(fixed.retryDelay(40)).isEqualTo(Duration.ofMillis(500));
        assertThat(ConsumerSettings.of("big").withRetryDelayMax(Duration.ofDays(365)).retryDelay(200))
            .isEqualTo(Duration.ofDays(365));
    }

    @Test
    @DisplayName("M4: an id in progress elsewhere comes back later, not counted; if its holder crashed, the delivery"
        + " after the lease runs the handler")
    void inProgressElsewhere() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<Void> never = new CompletableFuture<>(); // a holder that never finishes: it crashed
        CompletableFuture<Disposition> holder = consumer.process(message("m3", "{}", 0), m -> {
            entered.countDown();
            return never;
        }).toCompletableFuture();
        assertThat(entered.await(5, TimeUnit.SECONDS)).isTrue();
        Disposition second = process(message("m3", "{}", 0), counting);
        assertThat(second).isInstanceOfSatisfying(Disposition.Retry.class, r -> {
            assertThat(r.counted()).isFalse();
            assertThat(r.outcome()).isEqualTo(DeliveryOutcome.REQUEUED);
        });
        assertThat(runs).hasValue(0);
        clock.advance(ConsumerSettings.DEFAULT_LEASE.plusSeconds(1));
        assertThat(process(message("m3", "{}", 0), counting)).isEqualTo(new Disposition.Ack(DeliveryOutcome.PROCESSED));
        assertThat(runs).hasValue(1);
        assertThat(holder).isNotDone();
    }

    @Test
    @DisplayName("M4: the same id with another body is dead-lettered, and the first message's outcome stands")
    void idReused() {
        process(message("m4", "{\"amount\":1}", 0), counting);
        assertThat(process(message("m4", "{\"amount\":2}", 0), counting))
            .isInstanceOfSatisfying(Disposition.DeadLetter.class, d -> assertThat(d.reason()).contains("different body"));
        assertThat(runs).hasValue(1);
    }

    @Test
    @DisplayName("M4: 8 deliveries of one message racing: the handler runs once, the others are requeued or duplicates")
    void racing() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        MessageHandler slow = m -> CompletableFuture.runAsync(() -> {
            runs.incrementAndGet();
            try {
                release.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        List<CompletableFuture<Disposition>> all = new java.util.ArrayList<>();
        for (int i = 0; i < 8; i++) {
            all.add(consumer.process(message("m5", "{}", 0), slow).toCompletableFuture());
        }
        release.countDown();
        List<DeliveryOutcome> outcomes = all.stream().map(f -> f.orTimeout(10, TimeUnit.SECONDS).join().outcome()).toList();
        assertThat(runs).hasValue(1);
        assertThat(outcomes).containsOnlyOnce(DeliveryOutcome.PROCESSED).doesNotContain(DeliveryOutcome.DEAD_LETTERED);
    }

    @Test
    @DisplayName("M5: a transactional consumer needs a store with transactions; handlers must match the consumer's kind")
    void transactionalNeedsTransactions() {
        assertThatThrownBy(() -> new IdempotentConsumer(ConsumerSettings.of("tx").withTransactional(true), store, timer,
            new NoopMessagingMetrics())).isInstanceOf(IllegalStateException.class).hasMessageContaining("PostgreSQL");
        assertThatThrownBy(() -> consumer.process(message("m6", "{}", 0), (TransactionalMessageHandler) m -> { }))
            .isInstanceOf(IllegalStateException.class);
        assertThat(consumer.recordKey("m6")).hasSize(64).isNotEqualTo(new IdempotentConsumer(ConsumerSettings.of("other"),
            store, timer, new NoopMessagingMetrics()).recordKey("m6"));
    }
}
