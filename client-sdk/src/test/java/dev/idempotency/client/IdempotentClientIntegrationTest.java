package dev.idempotency.client;

import ch.qos.logback.classic.Level;
import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import dev.idempotency.client.TestTime.RecordingSleeper;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import io.github.resilience4j.retry.event.RetryOnRetryEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Property;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.URL;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

@MicronautTest
@Property(name = "spec.name", value = "IdempotentClientIntegrationTest")
@Property(name = "idempotency.in-flight-retry-after-max", value = "2s")
@Property(name = "idempotency.in-flight-retry-after-min", value = "2s")
class IdempotentClientIntegrationTest {

    @Inject
    @Client("/")
    HttpClient http;

    @Inject
    ClientTestApi api;

    MutableClock clock;
    RecordingSleeper sleeper;

    @BeforeEach
    void setUp() {
        clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        sleeper = new RecordingSleeper(clock);
        api.gate = new CountDownLatch(0);
    }

    private IdempotentClientConfig.Builder config() {
        return IdempotentClientConfig.custom().clock(clock).sleeper(sleeper).random(new Random(1));
    }

    private static NewPayment payment(long amount) {
        return new NewPayment(amount, "EUR");
    }

    @Test
    @DisplayName("C1: one key for every attempt of an operation, a new UUID per operation; 503 twice then 201 -> one side effect, 3 attempts")
    void sameKeyPerOperationNewKeyPerOperation() {
        IdempotentClient client = IdempotentClient.create(http, config().build());
        int before = api.effects("flaky");
        api.keysSeen.clear();

        IdempotentResult<Payment> first = client.execute(IdempotentRequest.post("/c/flaky/2", payment(100)), Payment.class);
        IdempotentResult<Payment> second = client.execute(IdempotentRequest.post("/c/flaky/2", payment(100)), Payment.class);

        assertThat(first.status()).isEqualTo(201);
        assertThat(first.attempts()).isEqualTo(3);
        assertThat(first.replayed()).isFalse();
        assertThat(first.body()).hasValueSatisfying(p -> assertThat(p.amount()).isEqualTo(100));
        assertThat(UUID.fromString(first.key()).version()).isEqualTo(4);
        assertThat(second.key()).isNotEqualTo(first.key());
        // what the server saw: the quoted sf-string, the same on all three attempts of each operation
        assertThat(api.keysSeen).containsExactly(
            "\"" + first.key() + "\"", "\"" + first.key() + "\"", "\"" + first.key() + "\"",
            "\"" + second.key() + "\"", "\"" + second.key() + "\"", "\"" + second.key() + "\"");
        assertThat(api.effects("flaky") - before).isEqualTo(2);
        assertThat(sleeper.sleeps).hasSize(4).allSatisfy(d -> assertThat(d).isBetween(Duration.ZERO, Duration.ofMillis(500)));
    }

    @Test
    @DisplayName("C1/C2: a caller key is sent bare when set, and a retry after a lost response gets the replay")
    void callerKeyBareAndReplay() {
        IdempotentClient client = IdempotentClient.create(http, config().keyFormat(KeyFormat.BARE).build());
        String key = "order-" + UUID.randomUUID();
        int before = api.effects("payments");
        IdempotentResult<Payment> r1 = client.execute(IdempotentRequest.post("/c/payments", payment(7)).key(key), Payment.class);
        IdempotentResult<Payment> r2 = client.execute(IdempotentRequest.post("/c/payments", payment(7)).key(key), Payment.class);
        assertThat(r1.key()).isEqualTo(key);
        assertThat(r1.replayed()).isFalse();
        assertThat(r2.replayed()).isTrue();
        assertThat(r2.bodyBytes()).isEqualTo(r1.bodyBytes());
        assertThat(api.effects("payments") - before).isEqualTo(1);
        assertThatThrownBy(() -> client.execute(IdempotentRequest.post("/c/payments", payment(7)).key("has space")))
            .isInstanceOf(InvalidIdempotencyKeyException.class);
    }

    @Test
    @DisplayName("C4/C5/C9: a 409 in progress with Retry-After: 2 waits >= 2 s (recorded, not slept), then gets the replay")
    void inProgressWaitsRetryAfterThenReplays() throws Exception {
        String key = UUID.randomUUID().toString();
        CompletableFuture<String> original = startSlowOriginal(key);
        IdempotentClient client = IdempotentClient.create(http, config().build());
        sleeper.onSleep = d -> api.gate.countDown();   // let the original finish while the client "waits"
        sleeper.until = original;

        IdempotentResult<String> result = client.execute(IdempotentRequest.post("/c/slow", payment(5)).key(key), String.class);

        assertThat(sleeper.sleeps).hasSize(1);
        assertThat(sleeper.sleeps.get(0)).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
        assertThat(result.attempts()).isEqualTo(2);
        assertThat(result.replayed()).isTrue();
        assertThat(result.body()).contains(original.get());
        assertThat(api.effects("slow")).isPositive();
    }

    @Test
    @DisplayName("C5/C6: a Retry-After past the remaining deadline fails at once with the deadline exception")
    void retryAfterPastDeadline() throws Exception {
        String key = UUID.randomUUID().toString();
        CompletableFuture<String> original = startSlowOriginal(key);
        try {
            IdempotentClient client = IdempotentClient.create(http, config().deadline(Duration.ofSeconds(1)).build());
            DeadlineExceededException e = catchThrowableOfType(
                () -> client.execute(IdempotentRequest.post("/c/slow", payment(5)).key(key)), DeadlineExceededException.class);
            assertThat(e).hasMessageContaining("Retry-After 2 s").hasMessageContaining("past the deadline");
            assertThat(e.attempts()).isEqualTo(1);
            assertThat(e.key()).isEqualTo(key);
            assertThat(e.status()).hasValue(409);
            assertThat(e.problem()).hasValueSatisfying(p -> assertThat(p.code()).isEqualTo(ProblemDetails.REQUEST_IN_PROGRESS));
            assertThat(sleeper.sleeps).isEmpty();
        } finally {
            api.gate.countDown();
            original.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    @DisplayName("C4/C9: 422 key reused is never retried and says so, carrying the key and the problem")
    void keyReusedNeverRetried() {
        IdempotentClient client = IdempotentClient.create(http, config().build());
        String key = UUID.randomUUID().toString();
        client.execute(IdempotentRequest.post("/c/payments", payment(1)).key(key));
        IdempotencyKeyReusedException e = catchThrowableOfType(
            () -> client.execute(IdempotentRequest.post("/c/payments", payment(2)).key(key)), IdempotencyKeyReusedException.class);
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.key()).isEqualTo(key);
        assertThat(e).hasMessageContaining("already used with a different request").hasMessageContaining("not retried");
        assertThat(e.problem()).hasValueSatisfying(p -> {
            assertThat(p.code()).isEqualTo("idempotency-key-reused");
            assertThat(p.status()).isEqualTo(422);
            assertThat(p.type()).endsWith("#idempotency-key-reused");
            assertThat(p.title()).isNotBlank();
            assertThat(p.detail()).isNotBlank();
        });
        assertThat(sleeper.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C4: a 400 is never retried")
    void badRequestNeverRetried() {
        IdempotentClient client = IdempotentClient.create(http, config().build());
        int before = api.effects("bad-request");
        NonRetryableStatusException e = catchThrowableOfType(
            () -> client.execute(IdempotentRequest.post("/c/bad-request", payment(1))), NonRetryableStatusException.class);
        assertThat(e.status()).hasValue(400);
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.response()).hasValueSatisfying(r -> assertThat(new String(r.bodyBytes())).contains("amount too small"));
        assertThat(api.effects("bad-request") - before).isEqualTo(1);
        assertThat(sleeper.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C4: a business 409 (stored and replayed by the server) is never retried, even with Retry-After")
    void businessConflictNeverRetried() {
        IdempotentClient client = IdempotentClient.create(http, config().build());
        int before = api.effects("capture");
        NonRetryableStatusException e = catchThrowableOfType(
            () -> client.execute(IdempotentRequest.post("/c/capture", payment(1))), NonRetryableStatusException.class);
        assertThat(e).isNotInstanceOf(RequestInProgressException.class);
        assertThat(e.status()).hasValue(409);
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(e.problem()).hasValueSatisfying(p -> assertThat(p.code()).isEqualTo("payment-already-captured"));
        assertThat(api.effects("capture") - before).isEqualTo(1);
        assertThat(sleeper.sleeps).isEmpty();
    }

    @Test
    @DisplayName("C4/C9: retries exhausted on 5xx after max attempts, carrying the key and the last response")
    void retriesExhausted() {
        IdempotentClient client = IdempotentClient.create(http, config().maxAttempts(2).build());
        RetriesExhaustedException e = catchThrowableOfType(
            () -> client.execute(IdempotentRequest.post("/c/flaky/5", payment(1))), RetriesExhaustedException.class);
        assertThat(e.attempts()).isEqualTo(2);
        assertThat(e.status()).hasValue(503);
        assertThat(e).hasMessageContaining("all 2 attempts failed");
        assertThat(sleeper.sleeps).hasSize(1);
    }

    @Test
    @DisplayName("C10: resilience4j retry events, Micrometer meters and exactly one log line per retry")
    void visibility() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        IdempotentClient client = IdempotentClient.create(http, config().name("visible").meterRegistry(meters).build());
        List<RetryOnRetryEvent> events = new CopyOnWriteArrayList<>();
        client.retry().getEventPublisher().onRetry(events::add);
        try (LogCapture log = LogCapture.of(IdempotentClient.class, Level.INFO).start()) {
            IdempotentResult<byte[]> r = client.execute(IdempotentRequest.post("/c/flaky/2", payment(3)));
            assertThat(events).hasSize(2);
            assertThat(events).extracting(RetryOnRetryEvent::getWaitInterval).containsExactlyElementsOf(sleeper.sleeps);
            List<String> lines = log.lines();
            assertThat(lines).hasSize(2);
            assertThat(lines.get(0))
                .contains("attempt 1 of 4", "status 503", "retrying in " + sleeper.sleeps.get(0).toMillis() + " ms", r.key());
            assertThat(lines.get(1)).contains("attempt 2 of 4");
            assertThat(meters.counter("idempotency.client.attempts", "client", "visible").count()).isEqualTo(3);
            assertThat(meters.counter("idempotency.client.retries", "client", "visible", "reason", "status-503").count()).isEqualTo(2);
            assertThat(meters.counter("idempotency.client.outcomes", "client", "visible", "outcome", "success").count()).isEqualTo(1);
            assertThat(meters.find("resilience4j.retry.calls").tag("name", "visible").tag("kind", "successful_with_retry")
                .functionCounter().count()).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("C7: server down: the per-host budget stops the retries, and later calls fail fast after one attempt")
    void budgetStopsRetriesWhenServerIsDown() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (HttpClient down = HttpClient.create(new URL("http://127.0.0.1:" + port))) {
            IdempotentClient client = IdempotentClient.create(down, config().budgetCapacity(2).build());

            RetryBudgetExhaustedException first = catchThrowableOfType(
                () -> client.execute(IdempotentRequest.post("/c/payments", payment(1))), RetryBudgetExhaustedException.class);
            assertThat(first.attempts()).isEqualTo(3);   // 1 + the 2 retries the budget paid for
            assertThat(first).hasRootCauseInstanceOf(ConnectException.class);
            assertThat(sleeper.sleeps).hasSize(2);

            RetryBudgetExhaustedException later = catchThrowableOfType(
                () -> client.execute(IdempotentRequest.post("/c/payments", payment(1))), RetryBudgetExhaustedException.class);
            assertThat(later.attempts()).isEqualTo(1);
            assertThat(later).hasMessageContaining("retry budget").hasMessageContaining("empty");
            assertThat(sleeper.sleeps).hasSize(2);      // no more waiting
        }
    }

    @Test
    @DisplayName("C8: a stream body is classified not replayable (the driver then sends it once); an object body is replayable")
    void streamBodyNotRetried() {
        IdempotentRequest op = IdempotentRequest.post("/c/flaky/1", new java.io.ByteArrayInputStream("{}".getBytes()));
        assertThat(op.replayable()).isFalse();
        assertThat(IdempotentRequest.post("/c/flaky/1", payment(1)).replayable()).isTrue();
    }

    @Test
    @DisplayName("C9: the async form gives the same result")
    void async() throws Exception {
        IdempotentClient client = IdempotentClient.create(http, config().build());
        IdempotentResult<Payment> r = client.executeAsync(IdempotentRequest.post("/c/flaky/1", payment(9)), Payment.class)
            .get(10, TimeUnit.SECONDS);
        assertThat(r.attempts()).isEqualTo(2);
        assertThat(r.body()).hasValueSatisfying(p -> assertThat(p.amount()).isEqualTo(9));
    }

    /** Starts the original request with the key and waits until its handler is running (gate closed). */
    private CompletableFuture<String> startSlowOriginal(String key) throws InterruptedException {
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        CompletableFuture<String> original = CompletableFuture.supplyAsync(() -> http.toBlocking().retrieve(
            HttpRequest.POST("/c/slow", payment(5)).header("Idempotency-Key", "\"" + key + "\"")));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        return original;
    }
}
