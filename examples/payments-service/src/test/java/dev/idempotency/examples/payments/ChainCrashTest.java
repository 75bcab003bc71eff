package dev.idempotency.examples.payments;

import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.testsupport.ChildJvm;
import dev.idempotency.testsupport.FaultProxy;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.DefaultHttpClientConfiguration;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.HttpClientConfiguration;
import io.micronaut.json.JsonMapper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT C11 and S23 on real processes: edge (this JVM, the client SDK) → payments service (a
 * JVM of its own) → card gateway (another), with the fault proxy on both hops. Each run kills the
 * payments service ({@code Runtime.halt}, as {@code kill -9}) at one step boundary of a capture,
 * starts it again, and lets the edge's retries finish every capture. Then the gateway has charged
 * each payment exactly once, with one key per operation, and every edge caller got one consistent
 * result. On Redis the service runs leased (the charge is a durable step); on PostgreSQL in
 * transactional mode (the charge's step recorded beside the attempt's transaction); either way the
 * gateway call carries the derived key.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ChainCrashTest {

    private static final int CAPTURES = 6;
    private static final Argument<Map<String, Object>> JSON = Argument.mapOf(String.class, Object.class);

    private final Path logs = Path.of("target", "chain-crash");
    private final JsonMapper json = JsonMapper.createDefault();
    private final java.net.http.HttpClient plain = java.net.http.HttpClient.newHttpClient();
    private final List<String> schemas = new ArrayList<>();
    private final String redisPrefix = "chain-" + UUID.randomUUID() + ":";
    private ChildJvm gateway;
    private int gatewayPort;

    @BeforeAll
    void startGateway() throws Exception {
        Files.createDirectories(logs);
        gatewayPort = freePort();
        gateway = ChildJvm.of("dev.idempotency.examples.gateway.GatewayApplication", List.of("payments-service"),
            Map.of("micronaut.server.port", Integer.toString(gatewayPort)), gatewayPort, logs.resolve("gateway.log")).start();
    }

    @AfterAll
    void stopAll() {
        if (gateway != null) {
            gateway.close();
        }
        schemas.forEach(TestPostgres::dropSchema);
        TestRedis.deleteKeys(redisPrefix);
    }

    @ParameterizedTest(name = "{0}, killed {1}")
    @CsvSource({
        "redis, before-charge", "redis, after-charge", "redis, after-charge-recorded", "redis, after-response",
        "postgres, before-charge", "postgres, after-charge", "postgres, after-charge-recorded", "postgres, after-response"})
    @DisplayName("C11/S23: killed at a step boundary of a capture, the chain charges every payment once")
    void killedAtAStepBoundary(String store, String point) throws Exception {
        Path marker = logs.resolve(store + "-" + point + ".crashed");
        Files.deleteIfExists(marker);
        int paymentsPort = freePort();
        Map<String, String> props = new LinkedHashMap<>();
        props.put("micronaut.server.port", Integer.toString(paymentsPort));
        // the payments themselves live in PostgreSQL either way (they must outlive the crash); the
        // records in Redis, leased, with the charge as a durable step; or in PostgreSQL, in
        // transactional mode, the charge's step recorded beside the attempt's transaction
        props.put("micronaut.environments", store.equals("redis") ? "postgres,redis" : "postgres");
        props.put("idempotency.outbox.enabled", "false");
        props.put("idempotency.rabbitmq.enabled", "false");
        props.put("idempotency.lease", "2s");
        props.put("payments.demo.delay-enabled", "false");
        props.put("payments.test.crash-at", point);
        props.put("payments.test.crash-marker", marker.toAbsolutePath().toString());
        String schema = TestPostgres.newSchema();
        schemas.add(schema);
        TestPostgres.properties(TestPostgres.server(), schema).forEach((k, v) -> props.put(k, String.valueOf(v)));
        props.put("micronaut.server.port", Integer.toString(paymentsPort));
        props.put("payments.postgres.schema", schema);
        props.put("idempotency.store.postgres.purge-enabled", "false");
        if (store.equals("redis")) {
            props.put("idempotency.store.type", "redis");
            props.put("idempotency.transactional", "false");
            props.put("redis.uri", TestRedis.uri());
            props.put("idempotency.store.redis.key-prefix", redisPrefix + point + ":");
        }
        try (FaultProxy toGateway = FaultProxy.builder().upstream(gatewayPort).seed(point.hashCode())
                .resetProbability(0.1).dropResponseProbability(0.1).dropMode(FaultProxy.DropMode.RESET).build().start();
             FaultProxy toPayments = FaultProxy.builder().upstream(paymentsPort).seed(store.hashCode())
                 .resetProbability(0.1).dropResponseProbability(0.1).build().start()) {
            props.put("payments.gateway.url", toGateway.baseUrl());
            Path log = logs.resolve(store + "-" + point + ".log");
            ChildJvm payments = ChildJvm.of("dev.idempotency.examples.payments.Application", List.of("card-gateway"),
                props, paymentsPort, log).start();
            AtomicInteger crashes = new AtomicInteger();
            try (HttpClient http = HttpClient.create(new URL(toPayments.baseUrl()), clientConfig())) {
                IdempotentClient edge = IdempotentClient.create(http, IdempotentClientConfig.custom().name("edge")
                    .maxAttempts(30).baseDelay(Duration.ofMillis(200)).maxDelay(Duration.ofSeconds(1))
                    .deadline(Duration.ofSeconds(90)).budgetCapacity(10_000).build());
                List<String> ids = new ArrayList<>();
                for (int i = 0; i < CAPTURES; i++) {
                    Map<String, Object> created = edge.execute(IdempotentRequest.post("/payments",
                        Map.of("amount", 1000 + i, "currency", "EUR")), JSON).body().orElseThrow();
                    ids.add((String) created.get("id"));
                }
                // on PostgreSQL (transactional) the captures run at once, and the crash takes those in
                // flight with it: whatever their step, their attempt rolls back whole. In leased mode
                // (Redis) the capture's write to the payments table is not atomic with its record, so
                // a capture killed between the two would be run again and refused as already captured
                // (what transactional mode is for): there they run one after another, and the crash
                // meets exactly the one capture at the point under test
                ExecutorService callers = Executors.newFixedThreadPool(store.equals("postgres") ? CAPTURES : 1);
                List<CompletableFuture<IdempotentResult<Map<String, Object>>>> captures = new ArrayList<>();
                for (String id : ids) {
                    captures.add(CompletableFuture.supplyAsync(() -> edge.execute(
                        IdempotentRequest.post("/payments/" + id + "/capture", null), JSON), callers));
                }
                // the crash (exit code 137), then the service started again with the same command
                CompletableFuture<Void> restarted = CompletableFuture.runAsync(() -> {
                    if (payments.awaitExit(Duration.ofSeconds(90)) == 137) {
                        crashes.incrementAndGet();
                    }
                    payments.start();
                });
                List<IdempotentResult<Map<String, Object>>> results = new ArrayList<>();
                for (CompletableFuture<IdempotentResult<Map<String, Object>>> c : captures) {
                    results.add(c.get(120, TimeUnit.SECONDS));
                }
                callers.shutdownNow();
                restarted.get(30, TimeUnit.SECONDS);

                assertThat(crashes.get()).as("the service died at " + point + " once").isEqualTo(1);
                assertThat(Files.exists(marker)).isTrue();
                for (int i = 0; i < CAPTURES; i++) {
                    IdempotentResult<Map<String, Object>> r = results.get(i);
                    assertThat(r.status()).isEqualTo(200);
                    assertThat(r.body().orElseThrow()).containsEntry("id", ids.get(i)).containsEntry("status", "CAPTURED");
                    // the caller's result is the operation's one: asked again with its key, the same bytes
                    IdempotentResult<Map<String, Object>> again = edge.execute(IdempotentRequest.post(
                        "/payments/" + ids.get(i) + "/capture", null).key(r.key()), JSON);
                    assertThat(again.replayed()).isTrue();
                    assertThat(again.bodyBytes()).isEqualTo(r.bodyBytes());
                }
                Map<String, Object> stats = json.readValue(get(gatewayPort, "/charges/stats"), JSON);
                @SuppressWarnings("unchecked")
                Map<String, Object> perPayment = (Map<String, Object>) stats.get("perPayment");
                for (String id : ids) {
                    assertThat(((Number) perPayment.get(id)).longValue()).as("charges of " + id).isEqualTo(1);
                }
            } finally {
                payments.close();
            }
        }
    }

    /** @return the body of a GET */
    private byte[] get(int port, String path) throws IOException, InterruptedException {
        HttpResponse<byte[]> response = plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofByteArray());
        return response.body();
    }

    private static HttpClientConfiguration clientConfig() {
        DefaultHttpClientConfiguration config = new DefaultHttpClientConfiguration();
        config.setReadTimeout(Duration.ofSeconds(10));
        return config;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
