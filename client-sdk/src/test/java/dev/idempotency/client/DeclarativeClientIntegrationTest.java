package dev.idempotency.client;

import ch.qos.logback.classic.Level;
import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import dev.idempotency.client.DeclarativeTestClients.LossyNetwork;
import dev.idempotency.client.DeclarativeTestClients.NaiveClient;
import dev.idempotency.client.DeclarativeTestClients.PaymentsClient;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.client.TestTime.RecordingSleeper;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** CONTRACT C8: @IdempotentCall on declarative @Client interfaces, against the real server filter. */
@MicronautTest
@Property(name = "spec.name", value = "DeclarativeClientIntegrationTest")
@Property(name = "idempotency.in-flight-retry-after-max", value = "2s")
@Property(name = "idempotency.in-flight-retry-after-min", value = "2s")
class DeclarativeClientIntegrationTest {

    static final MutableClock CLOCK = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
    static final RecordingSleeper SLEEPER = new RecordingSleeper(CLOCK);
    static final SimpleMeterRegistry METERS = new SimpleMeterRegistry();

    /** The settings the annotated methods name: @IdempotentCall("decl"). */
    @Factory
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    static class Settings {
        @Singleton
        @Named("decl")
        IdempotentClient decl(@Client("/") HttpClient http) {
            return IdempotentClient.create(http, IdempotentClientConfig.custom().name("decl")
                .clock(CLOCK).sleeper(SLEEPER).random(new Random(1)).meterRegistry(METERS)
                .budgetCapacity(1000).build());
        }
    }

    @Inject
    PaymentsClient payments;

    @Inject
    NaiveClient naive;

    @Inject
    LossyNetwork network;

    @Inject
    DeclarativeTestApi api;

    @Inject
    DeclarativeTestApi.KeysAtTheEdge edge;

    @Inject
    @Client("/")
    HttpClient http;

    @BeforeEach
    void setUp() {
        SLEEPER.sleeps.clear();
        SLEEPER.onSleep = d -> { };
        SLEEPER.until = CompletableFuture.completedFuture(null);
        api.gate = new CountDownLatch(0);
        api.keysSeen.clear();
        api.bodiesSeen.clear();
        network.dropNext.set(0);
    }

    private static NewPayment payment(long amount) {
        return new NewPayment(amount, "EUR");
    }

    private static String quoted(String key) {
        return "\"" + key + "\"";
    }

    @Test
    @DisplayName("C1/C8/C9: 503 twice then 201 -> one side effect, 3 attempts, the same key on every attempt of the invocation")
    void wholeInvocationRetriedWithOneKey() {
        int before = api.effects("flaky");

        Payment p = payments.flaky(2, payment(100));

        IdempotentResult<?> result = IdempotentCalls.lastResult().orElseThrow();
        assertThat(p.amount()).isEqualTo(100);
        assertThat(result.attempts()).isEqualTo(3);
        assertThat(result.status()).isEqualTo(201);
        assertThat(result.replayed()).isFalse();
        assertThat(result.body().orElseThrow()).isEqualTo(p);
        assertThat(UUID.fromString(result.key()).version()).isEqualTo(4);
        assertThat(api.keysSeen).containsExactly(quoted(result.key()), quoted(result.key()), quoted(result.key()));
        assertThat(api.effects("flaky") - before).isEqualTo(1);
        assertThat(SLEEPER.sleeps).hasSize(2).allSatisfy(d -> assertThat(d).isBetween(Duration.ZERO, Duration.ofMillis(500)));
    }

    @Test
    @DisplayName("C1/C8: each invocation is a new operation with a new key; HttpResponse<T> returns work too")
    void newKeyPerInvocation() {
        HttpResponse<Payment> first = payments.flakyResponse(1, payment(1));
        String firstKey = IdempotentCalls.lastResult().orElseThrow().key();
        HttpResponse<Payment> second = payments.flakyResponse(1, payment(1));
        String secondKey = IdempotentCalls.lastResult().orElseThrow().key();

        assertThat(first.code()).isEqualTo(201);
        assertThat(second.code()).isEqualTo(201);
        assertThat(first.body().amount()).isEqualTo(1);
        assertThat(secondKey).isNotEqualTo(firstKey);
        assertThat(api.keysSeen).containsExactly(quoted(firstKey), quoted(firstKey), quoted(secondKey), quoted(secondKey));
    }

    @Test
    @DisplayName("C1/C8/C9: a caller key from the @IdempotencyKey parameter is validated, sent on every attempt, kept out of the body; the same key again gets the replay")
    void callerKeyFromParameter() {
        String key = "order-" + UUID.randomUUID();
        int before = api.effects("payments");

        HttpResponse<Payment> r1 = payments.create(payment(7), key);
        IdempotentResult<?> meta1 = IdempotentCalls.lastResult().orElseThrow();
        HttpResponse<Payment> r2 = payments.create(payment(7), key);
        IdempotentResult<?> meta2 = IdempotentCalls.lastResult().orElseThrow();

        assertThat(meta1.key()).isEqualTo(key);
        assertThat(meta1.replayed()).isFalse();
        assertThat(r1.getHeaders().get("Idempotent-Replayed")).isNull();
        assertThat(meta2.replayed()).isTrue();
        assertThat(r2.getHeaders().get("Idempotent-Replayed")).isEqualTo("true");
        assertThat(r2.body()).isEqualTo(r1.body());
        assertThat(api.effects("payments") - before).isEqualTo(1);
        assertThat(api.keysSeen).containsExactly(quoted(key));
        assertThat(api.bodiesSeen).containsExactly(payment(7));   // the key did not leak into the body

        // a null key means "make one"
        payments.create(payment(8), null);
        assertThat(UUID.fromString(IdempotentCalls.lastResult().orElseThrow().key()).version()).isEqualTo(4);

        // an invalid key: nothing is sent
        int sent = api.keysSeen.size();
        assertThatThrownBy(() -> payments.create(payment(9), "caf\u00e9")).isInstanceOf(InvalidIdempotencyKeyException.class);
        assertThatThrownBy(() -> payments.create(payment(9), "")).isInstanceOf(InvalidIdempotencyKeyException.class);
        assertThat(api.keysSeen).hasSize(sent);
        assertThat(IdempotentCalls.lastResult()).isEmpty();
    }

    @Test
    @DisplayName("C4/C8/C9: 422 idempotency-key-reused is not retried and becomes IdempotencyKeyReusedException with the problem body")
    void keyReusedNotRetried() {
        String key = UUID.randomUUID().toString();
        payments.create(payment(1), key);

        IdempotencyKeyReusedException e = catchThrowableOfType(() -> payments.create(payment(2), key),
            IdempotencyKeyReusedException.class);

        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.status()).hasValue(422);
        assertThat(e.problem()).hasValueSatisfying(p -> {
            assertThat(p.code()).isEqualTo(ProblemDetails.KEY_REUSED);
            assertThat(p.status()).isEqualTo(422);
        });
        assertThat(SLEEPER.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C4/C8: a 400 is not retried and becomes NonRetryableStatusException")
    void badRequestNotRetried() {
        int before = api.effects("bad-request");
        NonRetryableStatusException e = catchThrowableOfType(() -> payments.badRequest(payment(1)),
            NonRetryableStatusException.class);
        assertThat(e.status()).hasValue(400);
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.response()).hasValueSatisfying(r -> assertThat(new String(r.bodyBytes())).contains("amount too small"));
        assertThat(api.effects("bad-request") - before).isEqualTo(1);
        assertThat(SLEEPER.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C4/C5/C8/C9: a 409 in progress with Retry-After: 2 waits >= 2 s (recorded by the sleeper, not slept), then gets the replay")
    void inProgressHonoursRetryAfter() throws Exception {
        String key = UUID.randomUUID().toString();
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        CompletableFuture<String> original = CompletableFuture.supplyAsync(() -> http.toBlocking().retrieve(
            HttpRequest.POST("/d/slow", payment(5)).header("Idempotency-Key", quoted(key))));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        SLEEPER.onSleep = d -> api.gate.countDown();   // the original finishes while the call "waits"
        SLEEPER.until = original;

        String body = payments.slow(payment(5), key);

        IdempotentResult<?> result = IdempotentCalls.lastResult().orElseThrow();
        assertThat(SLEEPER.sleeps).hasSize(1);
        assertThat(SLEEPER.sleeps.get(0)).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
        assertThat(result.attempts()).isEqualTo(2);
        assertThat(result.replayed()).isTrue();
        assertThat(body).isEqualTo(original.get());
        assertThat(api.effects("slow")).isEqualTo(1);
    }

    @Test
    @DisplayName("C1/C8 TRAP: a naive filter that mints a key per request sends a NEW key on each retry and the server runs the payment twice; @IdempotentCall keeps one key and gets the replay")
    void naiveFilterBreaksIdempotencyAnnotatedMethodDoesNot() {
        // the naive way: Micronaut's @Retryable + a key-minting client filter; the first response is lost
        edge.keys.clear();
        network.dropNext.set(1);
        HttpResponse<Payment> naiveResponse = naive.trap(payment(42));
        List<String> naiveKeys = List.copyOf(edge.keys);

        assertThat(naiveResponse.code()).isEqualTo(201);
        assertThat(naiveKeys).hasSize(2);
        assertThat(naiveKeys.get(0)).isNotEqualTo(naiveKeys.get(1));          // a new key per attempt...
        assertThat(api.effects("trap-naive")).isEqualTo(2);                    // ...so the customer is charged twice
        assertThat(naiveResponse.getHeaders().get("Idempotent-Replayed")).isNull();

        // the annotated method, the same lost response
        edge.keys.clear();
        network.dropNext.set(1);
        HttpResponse<Payment> response = payments.trap(payment(42));
        IdempotentResult<?> result = IdempotentCalls.lastResult().orElseThrow();

        assertThat(response.code()).isEqualTo(201);
        assertThat(edge.keys).containsExactly(quoted(result.key()), quoted(result.key()));      // one key, both attempts
        assertThat(api.effects("trap-annotated")).isEqualTo(1);                                 // charged once
        assertThat(response.getHeaders().get("Idempotent-Replayed")).isEqualTo("true");          // the stored result
        assertThat(result.attempts()).isEqualTo(2);
        assertThat(result.replayed()).isTrue();
        assertThat(SLEEPER.sleeps).hasSize(1);
    }

    @Test
    @DisplayName("C8/C10: a declarative retry is one log line, a resilience4j retry and Micrometer meters, like the programmatic client")
    void visibility() {
        double retriesBefore = METERS.counter("idempotency.client.retries", "client", "decl", "reason", "status-503").count();
        try (LogCapture log = LogCapture.of(IdempotentClient.class, Level.INFO).start()) {
            payments.flaky(1, payment(3));
            String key = IdempotentCalls.lastResult().orElseThrow().key();
            assertThat(log.lines()).singleElement().asString()
                .contains("POST /d/flaky/1", "PaymentsClient.flaky", "attempt 1 of 4", "status 503",
                    "retrying in " + SLEEPER.sleeps.get(0).toMillis() + " ms", key);
            assertThat(METERS.counter("idempotency.client.retries", "client", "decl", "reason", "status-503").count())
                .isEqualTo(retriesBefore + 1);
        }
    }

    @Test
    @DisplayName("C1/C8/C9: a CompletableFuture method: 503 twice then 201 -> one side effect, the same key on every attempt, waits by the sleeper")
    void completableFutureRetriedWithOneKey() throws Exception {
        int before = api.effects("flaky");

        CompletableFuture<Payment> future = payments.async(2, payment(300));

        Payment p = future.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(p.amount()).isEqualTo(300);
        assertThat(api.keysSeen).hasSize(3).containsOnly(api.keysSeen.get(0));
        assertThat(UUID.fromString(api.keysSeen.get(0).replace("\"", "")).version()).isEqualTo(4);
        assertThat(api.effects("flaky") - before).isEqualTo(1);
        assertThat(SLEEPER.sleeps).hasSize(2);
    }

    @Test
    @DisplayName("C1/C8: a Publisher method: retried with one key like the blocking form; the publisher emits the final body")
    void publisherRetriedWithOneKey() throws Exception {
        int before = api.effects("flaky");
        CompletableFuture<Payment> first = new CompletableFuture<>();
        payments.publisher(1, payment(301)).subscribe(new org.reactivestreams.Subscriber<>() {
            @Override
            public void onSubscribe(org.reactivestreams.Subscription s) {
                s.request(1);
            }

            @Override
            public void onNext(Payment item) {
                first.complete(item);
            }

            @Override
            public void onError(Throwable t) {
                first.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                first.complete(null);
            }
        });
        assertThat(first.get(10, java.util.concurrent.TimeUnit.SECONDS).amount()).isEqualTo(301);
        assertThat(api.keysSeen).hasSize(2).containsOnly(api.keysSeen.get(0));
        assertThat(api.effects("flaky") - before).isEqualTo(1);
    }

    @Test
    @DisplayName("C1/C8: Reactor Mono and Flux methods: retried with one key; they emit the final body")
    void reactorTypesRetriedWithOneKey() {
        int before = api.effects("flaky");
        Payment p = payments.mono(2, payment(302)).block(Duration.ofSeconds(10));
        assertThat(p.amount()).isEqualTo(302);
        assertThat(api.keysSeen).hasSize(3).containsOnly(api.keysSeen.get(0));
        api.keysSeen.clear();
        java.util.List<Payment> all = payments.flux(1, payment(303)).collectList().block(Duration.ofSeconds(10));
        assertThat(all).singleElement().satisfies(q -> assertThat(q.amount()).isEqualTo(303));
        assertThat(api.keysSeen).hasSize(2).containsOnly(api.keysSeen.get(0));
        assertThat(api.effects("flaky") - before).isEqualTo(2);
    }

    @Test
    @DisplayName("C4/C8: an asynchronous method's 400 is not retried: its stage fails with NonRetryableStatusException")
    void asyncNonRetryable() {
        int before = api.effects("bad-request");
        java.util.concurrent.CompletionStage<Payment> stage = payments.asyncBadRequest(payment(1));
        Throwable failure = catchThrowableOfType(
            () -> stage.toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS),
            java.util.concurrent.ExecutionException.class).getCause();
        assertThat(failure).isInstanceOfSatisfying(NonRetryableStatusException.class, e -> {
            assertThat(e.status()).hasValue(400);
            assertThat(e.attempts()).isEqualTo(1);
        });
        assertThat(api.effects("bad-request") - before).isEqualTo(1);
        assertThat(SLEEPER.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C1/C2/C8: @IdempotentCall without a name uses the default settings: a UUIDv4 sent as an sf-string")
    void defaultSettings() {
        Payment p = payments.createWithDefaults(payment(11));
        IdempotentResult<?> result = IdempotentCalls.lastResult().orElseThrow();
        assertThat(p.amount()).isEqualTo(11);
        assertThat(result.attempts()).isEqualTo(1);
        assertThat(UUID.fromString(result.key()).version()).isEqualTo(4);
        assertThat(api.keysSeen).containsExactly(quoted(result.key()));
        assertThat(Collections.frequency(api.keysSeen, quoted(result.key()))).isEqualTo(1);
    }
}
