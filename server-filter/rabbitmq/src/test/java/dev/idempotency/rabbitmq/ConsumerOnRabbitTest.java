package dev.idempotency.rabbitmq;

import dev.idempotency.testsupport.Stores;
import com.rabbitmq.client.GetResponse;
import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.TestRabbit;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Idempotent consumers against the real broker (CONTRACT M4, M6), on each idempotency store:
 * duplicates, competing consumers, a consumer that dies mid-handler, and a poison message. The
 * broker is the machine's RabbitMQ, or an embedded AMQP 0-9-1 broker where none runs.
 */
class ConsumerOnRabbitTest {

    static final String SPEC = "ConsumerOnRabbitTest";

    /** What the handler did, per message body: the business effect the tests count. */
    static final Map<String, AtomicInteger> EFFECTS = new ConcurrentHashMap<>();
    /** Bodies whose handler waits here (set per test). */
    static volatile CountDownLatch gate = new CountDownLatch(0);
    static volatile CountDownLatch entered = new CountDownLatch(0);

    @Singleton
    @Named("ledger")
    @Requires(property = "spec.name", value = SPEC)
    static class Ledger implements MessageHandler {
        @Override
        public CompletableFuture<Void> handle(ReceivedMessage message) {
            String body = message.bodyText();
            if (body.startsWith("poison")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("cannot book " + body));
            }
            if (body.startsWith("slow")) {
                CountDownLatch wait = gate;
                return CompletableFuture.runAsync(() -> {
                    entered.countDown();
                    try {
                        wait.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted: the consumer was killed");
                    }
                    EFFECTS.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
                });
            }
            EFFECTS.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
            return CompletableFuture.completedFuture(null);
        }
    }

    private final String queue = "ledger-" + UUID.randomUUID();
    private final List<ApplicationContext> contexts = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        contexts.forEach(ApplicationContext::close);
        held.forEach(CountDownLatch::countDown);
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.deleteTopology(queue);
        }
        Stores.removeCreated();
    }

    private ApplicationContext consumer(Stores store, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>(store.properties());
        p.put("spec.name", SPEC);
        p.put("idempotency.rabbitmq.uri", TestRabbit.uri());
        p.put("idempotency.rabbitmq.consumers.ledger.queue", queue);
        p.put("idempotency.rabbitmq.consumers.ledger.retry-delay", "200ms");
        p.put("idempotency.rabbitmq.consumers.ledger.in-progress-delay", "200ms");
        p.put("idempotency.rabbitmq.consumers.ledger.max-attempts", "3");
        p.put("idempotency.outbox.enabled", "false");
        p.putAll(extra);
        ApplicationContext ctx = ApplicationContext.run(p);
        contexts.add(ctx);
        return ctx;
    }


    private static int effects(String body) {
        AtomicInteger n = EFFECTS.get(body);
        return n == null ? 0 : n.get();
    }

    @ParameterizedTest(name = "M4: {0}: a message delivered twice is booked once")
    @EnumSource(Stores.class)
    void deliveredTwice(Stores store) throws Exception {
        consumer(store, Map.of());
        String body = "twice-" + UUID.randomUUID();
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.send(queue, "id-" + body, body);
            b.send(queue, "id-" + body, body);
            Await.until("both deliveries settled", () -> {
                try {
                    return effects(body) == 1 && b.count(queue) == 0;
                } catch (Exception e) {
                    return false;
                }
            });
            Thread.sleep(500); // a second booking would show up by now; nothing is timed
        }
        assertThat(effects(body)).isEqualTo(1);
    }

    @ParameterizedTest(name = "M4: {0}: 50 copies of a message and 40 others (some twice), 4 competing consumers:"
        + " each booked once")
    @EnumSource(Stores.class)
    void competingConsumers(Stores store) throws Exception {
        if (store == Stores.MEMORY) {
            // an in-memory store is one instance's: four channels of one instance compete
            consumer(store, Map.of("idempotency.rabbitmq.consumers.ledger.concurrency", "4",
                "idempotency.rabbitmq.consumers.ledger.prefetch", "5"));
        } else {
            // two instances of two channels each, on one shared store
            Map<String, Object> two = new HashMap<>(Map.of("idempotency.rabbitmq.consumers.ledger.concurrency", "2",
                "idempotency.rabbitmq.consumers.ledger.prefetch", "5"));
            ApplicationContext first = consumer(store, two);
            copyStore(first, two);
            consumer(store, two);
        }
        String hot = "hot-" + UUID.randomUUID();
        List<String> others = new ArrayList<>();
        try (Broker b = new Broker(TestRabbit.uri())) {
            for (int i = 0; i < 50; i++) {
                b.send(queue, "id-" + hot, hot);
                if (i < 40) {
                    String other = "other-" + i + "-" + UUID.randomUUID();
                    others.add(other);
                    b.send(queue, "id-" + other, other);
                    if (i % 4 == 0) {
                        b.send(queue, "id-" + other, other);
                    }
                }
            }
            Await.until("every message booked and the queues empty", () -> {
                try {
                    return effects(hot) >= 1 && others.stream().allMatch(o -> effects(o) >= 1)
                        && b.count(queue) == 0 && b.count(queue + ".retry") == 0;
                } catch (Exception e) {
                    return false;
                }
            });
            Thread.sleep(500); // a second booking would show up by now; nothing is timed
        }
        assertThat(effects(hot)).isEqualTo(1);
        assertThat(others).allSatisfy(o -> assertThat(effects(o)).isEqualTo(1));
    }

    /** Makes {@code into} select the same store as {@code ctx} (the same Redis prefix, the same schema). */
    private static void copyStore(ApplicationContext ctx, Map<String, Object> into) {
        for (String key : List.of("redis.uri", "idempotency.store.redis.key-prefix", "idempotency.store.redis.enabled",
            "idempotency.store.postgres.enabled", "idempotency.store.type", "idempotency.store.postgres.schema", "datasources.default.url",
            "datasources.default.username", "datasources.default.password", "datasources.default.driver-class-name",
            "datasources.default.maximum-pool-size", "datasources.default.dialect")) {
            ctx.getProperty(key, String.class).ifPresent(v -> into.put(key, v));
        }
    }

    @ParameterizedTest(name = "M4/M6: {0}: a poison message comes back max-attempts times, then is dead-lettered with"
        + " the reason; the queue goes on")
    @EnumSource(Stores.class)
    void poison(Stores store) throws Exception {
        consumer(store, Map.of());
        String poison = "poison-" + UUID.randomUUID();
        String fine = "fine-" + UUID.randomUUID();
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.send(queue, "id-" + poison, poison);
            b.send(queue, "id-" + fine, fine);
            b.send(queue, null, "no-id-" + UUID.randomUUID());
            Await.until("two dead letters", () -> {
                try {
                    return b.count(queue + ".dead") == 2;
                } catch (Exception e) {
                    return false;
                }
            });
            List<GetResponse> dead = b.drain(queue + ".dead");
            GetResponse p = dead.stream().filter(r -> "id-".concat(poison).equals(r.getProps().getMessageId()))
                .findFirst().orElseThrow();
            assertThat(Broker.header(p, RabbitConsumers.REASON_HEADER)).contains("failed 3 times")
                .contains("cannot book " + poison);
            assertThat(Broker.header(p, RabbitConsumers.ATTEMPT_HEADER)).isEqualTo("2");
            assertThat(new String(p.getBody(), StandardCharsets.UTF_8)).isEqualTo(poison);
            GetResponse noId = dead.stream().filter(r -> r.getProps().getMessageId() == null).findFirst().orElseThrow();
            assertThat(Broker.header(noId, RabbitConsumers.REASON_HEADER)).contains("no message-id");
        }
        assertThat(effects(fine)).isEqualTo(1);
    }

    @ParameterizedTest(name = "M4: {0}: a consumer that dies mid-handler (connection gone, no ack): the redelivery"
        + " runs the handler once, after the dead holder's lease")
    @EnumSource(Stores.class)
    void consumerDiesMidHandler(Stores store) throws Exception {
        CountDownLatch never = new CountDownLatch(1); // the first holder never gets past it: it is "killed"
        held.add(never);
        gate = never;
        entered = new CountDownLatch(1);
        Map<String, Object> shortLease = new HashMap<>(Map.of("idempotency.rabbitmq.consumers.ledger.lease", "1s"));
        ApplicationContext dying = consumer(store, shortLease);
        copyStore(dying, shortLease);
        String body = "slow-" + UUID.randomUUID();
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.send(queue, "id-" + body, body);
            assertThat(entered.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            // the instance dies: its channel goes (the broker redelivers), its lease is renewed no more (an
            // in-memory store dies with it)
            dying.close();
            contexts.remove(dying);
            gate = new CountDownLatch(0);
            consumer(store, shortLease);
            Await.until("the redelivery booked", () -> effects(body) >= 1);
            Thread.sleep(1500); // a second booking would show up by now; nothing is timed
        }
        assertThat(effects(body)).isEqualTo(1);
    }

    /** Latches of killed handlers, let go once their instance is gone. */
    private final List<CountDownLatch> held = new ArrayList<>();
}
