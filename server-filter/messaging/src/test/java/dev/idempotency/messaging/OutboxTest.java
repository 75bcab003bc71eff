package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.DefaultOutbox;
import dev.idempotency.messaging.internal.NoopMessagingMetrics;
import dev.idempotency.server.IdempotentOperation;
import dev.idempotency.testsupport.MutableClock;
import io.micronaut.context.BeanProvider;
import io.micronaut.core.propagation.PropagatedContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The outbox and its relay on the in-memory outbox store (CONTRACT M2, M3): ids, order per key,
 * retries with backoff, parking, and a broker that is away. The broker is a recording
 * {@link MessageSender} here; the RabbitMQ module runs the same paths against a real broker.
 */
class OutboxTest {

    private final MutableClock clock = new MutableClock();
    private final InMemoryOutboxStore store = new InMemoryOutboxStore(1000);
    private final Broker broker = new Broker();
    private final OutboxConfigurationProperties config = new OutboxConfigurationProperties();
    private final OutboxRelay relay;
    private final DefaultOutbox outbox;

    OutboxTest() {
        config.setMaxAttempts(3);
        config.setRetryBackoff(Duration.ofSeconds(1));
        config.setRetryBackoffMax(Duration.ofSeconds(4));
        relay = new OutboxRelay(store, provider(broker), config, clock, new NoopMessagingMetrics());
        outbox = new DefaultOutbox(store, relay, clock, new NoopMessagingMetrics());
    }

    /** A broker that records what it confirms, refuses chosen bodies, or cannot be reached. */
    static final class Broker implements MessageSender {
        final List<OutboxRecord> confirmed = new ArrayList<>();
        final Set<String> refuse = new HashSet<>();
        boolean unreachable;
        int calls;

        @Override
        public CompletionStage<List<String>> send(List<OutboxRecord> messages) {
            calls++;
            if (unreachable) {
                return CompletableFuture.failedFuture(new java.io.IOException("connection refused"));
            }
            List<String> outcomes = new ArrayList<>();
            for (OutboxRecord m : messages) {
                String body = new String(m.body(), StandardCharsets.UTF_8);
                if (refuse.contains(body)) {
                    outcomes.add("NO_ROUTE: " + body);
                } else {
                    confirmed.add(m);
                    outcomes.add(null);
                }
            }
            return CompletableFuture.completedFuture(outcomes);
        }

        List<String> bodies() {
            return confirmed.stream().map(m -> new String(m.body(), StandardCharsets.UTF_8)).toList();
        }
    }

    static <T> BeanProvider<T> provider(T bean) {
        return new BeanProvider<>() {
            @Override
            public T get() {
                return bean;
            }

            @Override
            public boolean isPresent() {
                return bean != null;
            }
        };
    }

    private static OutgoingMessage msg(String body) {
        return OutgoingMessage.json("payments", "payment.captured", body);
    }

    private static IdempotentOperation operation(String key) {
        return new IdempotentOperation(key, "principal:alice POST /payments", Integer.toHexString(key.hashCode()).repeat(8));
    }

    @Test
    @DisplayName("M2: a message published inside an operation carries its id, key and record; a retry of the"
        + " operation publishes the same id, which the outbox keeps once")
    void publishedForTheOperation() {
        IdempotentOperation op = operation("order-1");
        String id;
        try (PropagatedContext.Scope ignored = PropagatedContext.getOrEmpty().plus(op).propagate()) {
            id = outbox.publish("payment.captured", msg("a"));
            assertThat(outbox.publish("payment.captured", msg("a"))).isEqualTo(id); // the retry
            assertThat(outbox.publish("ledger.requested", msg("b"))).isNotEqualTo(id);
        }
        assertThat(id).isEqualTo(op.messageId("payment.captured"));
        assertThat(store.depth()).isEqualTo(2);
        assertThat(relay.relay()).isEqualTo(2);
        OutboxRecord first = broker.confirmed.get(0);
        assertThat(first.messageId()).isEqualTo(id);
        assertThat(first.headers()).containsEntry(Outbox.KEY_HEADER, "order-1")
            .containsEntry(Outbox.RECORD_HEADER, op.recordId());
        assertThat(first.orderingKey()).isEqualTo(op.recordId());
        assertThat(store.depth()).isZero();
    }

    @Test
    @DisplayName("M2: outside an operation publishing needs an explicit id")
    void outsideAnOperation() {
        assertThatThrownBy(() -> outbox.publish("x", msg("a"))).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("@Idempotent");
        assertThat(outbox.publish("order-7-shipped", "order-7", msg("a"))).isEqualTo("order-7-shipped");
        relay.relay();
        assertThat(broker.confirmed.get(0).headers()).containsEntry(Outbox.KEY_HEADER, "order-7");
    }

    @Test
    @DisplayName("M3: a refused message is retried with backoff and holds back its key only; after max-attempts it is"
        + " parked with the reason and the key moves on, in order")
    void refusedThenParked() {
        outbox.publish("m1", null, msg("k1-first").orderedBy("k1"));
        outbox.publish("m2", null, msg("k1-second").orderedBy("k1"));
        outbox.publish("m3", null, msg("k2-only").orderedBy("k2"));
        broker.refuse.add("k1-first");

        relay.relay();
        assertThat(broker.bodies()).containsExactly("k2-only"); // k1-second waits behind k1-first
        assertThat(broker.calls).isEqualTo(1); // one batch, the heads of k1 and k2, then nothing is due
        relay.relay();
        assertThat(broker.bodies()).containsExactly("k2-only"); // not due yet: 1 s backoff

        clock.advance(Duration.ofSeconds(1));
        relay.relay(); // second refusal, next try in 2 s
        clock.advance(Duration.ofSeconds(1));
        relay.relay();
        assertThat(broker.bodies()).containsExactly("k2-only");

        clock.advance(Duration.ofSeconds(1));
        relay.relay(); // third refusal: parked; k1-second goes
        assertThat(broker.bodies()).containsExactly("k2-only", "k1-second");
        assertThat(store.parked()).singleElement().satisfies(p -> {
            assertThat(p.record().messageId()).isEqualTo("m1");
            assertThat(p.reason()).contains("NO_ROUTE");
        });
        assertThat(store.depth()).isZero();
    }

    @Test
    @DisplayName("M3: a broker that cannot be reached loses nothing and counts against no message; sending resumes"
        + " in order when it is back")
    void brokerAway() {
        broker.unreachable = true;
        for (int i = 0; i < 30; i++) {
            outbox.publish("m" + i, null, msg("n" + i).orderedBy("k"));
        }
        for (int i = 0; i < 10; i++) {
            relay.relay();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(store.depth()).isEqualTo(30);
        assertThat(store.parked()).isEmpty();
        broker.unreachable = false;
        clock.advance(Duration.ofSeconds(5));
        relay.relay();
        assertThat(broker.bodies()).hasSize(30).first().isEqualTo("n0");
        assertThat(broker.bodies()).last().isEqualTo("n29");
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            expected.add("n" + i);
        }
        assertThat(broker.bodies()).isEqualTo(expected);
    }

    @Test
    @DisplayName("M3: the in-memory outbox is bounded: past its capacity a publish fails instead of filling the heap")
    void bounded() {
        InMemoryOutboxStore small = new InMemoryOutboxStore(2);
        DefaultOutbox o = new DefaultOutbox(small, relay, clock, new NoopMessagingMetrics());
        o.publish("a", null, msg("a"));
        o.publish("b", null, msg("b"));
        assertThatThrownBy(() -> o.publish("c", null, msg("c"))).isInstanceOf(OutboxException.class)
            .hasMessageContaining("memory-capacity");
        assertThat(o.publish("a", null, msg("a"))).isEqualTo("a"); // a known id is no new message
    }
}
