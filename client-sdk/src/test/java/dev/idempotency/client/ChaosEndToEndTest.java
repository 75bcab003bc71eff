package dev.idempotency.client;

import dev.idempotency.server.Idempotent;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.http.filter.ServerFilterPhase;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * End to end: client SDK -> {@link FaultProxy} -> a Micronaut service under the real server
 * filter (in memory) whose handler counts side effects. The proxy drops 30 % of responses
 * after the server handled the request and resets 10 % of connections before forwarding,
 * decided by a fixed seed; operations run one after another, so the run is repeatable.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ChaosEndToEndTest {

    private static final String SERVER = "ChaosEndToEndTest-server";
    private static final String CLIENT = "ChaosEndToEndTest-client";

    /** The service: one side effect per executed order, counted per operation id. */
    @Controller("/chaos")
    @Requires(property = "spec.name", value = SERVER)
    static class OrdersApi {
        final Map<Integer, AtomicInteger> executions = new ConcurrentHashMap<>();

        @Post("/orders/{op}")
        @Idempotent
        HttpResponse<Map<String, Object>> order(@PathVariable int op, @Body Map<String, Object> body) {
            int n = executions.computeIfAbsent(op, k -> new AtomicInteger()).incrementAndGet();
            return HttpResponse.created(Map.of("op", op, "execution", n, "amount", body.get("amount")));
        }
    }

    /** Records the key of every request that reaches the server, before the idempotency filter. */
    @ServerFilter("/chaos/**")
    @Requires(property = "spec.name", value = SERVER)
    static class KeyRecorder implements Ordered {
        final Map<String, Set<String>> keysByPath = new ConcurrentHashMap<>();

        @RequestFilter
        void record(HttpRequest<?> request) {
            keysByPath.computeIfAbsent(request.getPath(), p -> ConcurrentHashMap.newKeySet())
                .add(request.getHeaders().get("Idempotency-Key"));
        }

        @Override
        public int getOrder() {
            return ServerFilterPhase.FIRST.order();
        }
    }

    /** The same operation as a declarative client, through the proxy. */
    @Client(id = "chaos")
    @Requires(property = "spec.name", value = CLIENT)
    interface OrdersClient {
        @Post("/chaos/orders/{op}")
        @IdempotentCall("chaos")
        HttpResponse<String> order(@PathVariable int op, @Body Map<String, Object> body);
    }

    private EmbeddedServer server;
    private FaultProxy proxy;
    private HttpClient http;
    private ApplicationContext clientContext;

    @BeforeAll
    void start() {
        server = ApplicationContext.run(EmbeddedServer.class, Map.of("spec.name", SERVER, "micronaut.server.port", "-1"));
        proxy = FaultProxy.builder().upstream(server.getPort()).seed(4711)
            .dropResponseProbability(0.3).resetProbability(0.1).build().start();
        http = HttpClient.create(uncheckedUrl(proxy.baseUrl()));
        clientContext = ApplicationContext.run(Map.of(
            "spec.name", CLIENT,
            "micronaut.http.services.chaos.url", proxy.baseUrl(),
            "idempotency.client.chaos.max-attempts", "12",
            "idempotency.client.chaos.base-delay", "5ms",
            "idempotency.client.chaos.max-delay", "50ms",
            "idempotency.client.chaos.budget-enabled", "false"));
    }

    private static java.net.URL uncheckedUrl(String url) {
        try {
            return URI.create(url).toURL();
        } catch (java.net.MalformedURLException e) {
            throw new IllegalArgumentException(e);
        }
    }

    @AfterAll
    void stop() {
        if (clientContext != null) {
            clientContext.close();
        }
        if (http != null) {
            http.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private OrdersApi api() {
        return server.getApplicationContext().getBean(OrdersApi.class);
    }

    private KeyRecorder recorder() {
        return server.getApplicationContext().getBean(KeyRecorder.class);
    }

    @Test
    @DisplayName("C1/C4/C9: 500 operations through 30% dropped responses and 10% resets: exactly one side "
        + "effect each, every call returns its original result, one key per operation on every attempt")
    void fiveHundredOperationsExactlyOnce() {
        // Waits are not what is tested here: an immediate sleeper keeps the run short. The retry
        // budget is off: at a 40 % fault rate it would (rightly) stop the retries, which C7 tests elsewhere.
        IdempotentClient client = IdempotentClient.create(http, IdempotentClientConfig.custom()
            .maxAttempts(12).budgetEnabled(false).random(new Random(7))
            .sleeper(d -> CompletableFuture.completedFuture(null)).build());
        long droppedBefore = proxy.responsesDropped();
        long resetsBefore = proxy.resets();
        int operations = 500;
        Set<String> keys = new HashSet<>();
        int replayed = 0;
        int retried = 0;
        for (int op = 0; op < operations; op++) {
            IdempotentResult<String> r = client.execute(
                IdempotentRequest.post("/chaos/orders/" + op, Map.of("amount", op * 10)), String.class);
            String body = new String(r.bodyBytes(), StandardCharsets.UTF_8);
            assertThat(r.status()).as("operation %d", op).isEqualTo(201);
            assertThat(body).as("operation %d returns its original result", op)
                .contains("\"op\":" + op).contains("\"execution\":1").contains("\"amount\":" + (op * 10));
            assertThat(api().executions.get(op).get()).as("side effects of operation %d", op).isEqualTo(1);
            assertThat(recorder().keysByPath.get("/chaos/orders/" + op))
                .as("keys the server saw for operation %d", op).containsExactly("\"" + r.key() + "\"");
            assertThat(keys.add(r.key())).as("a new key for operation %d", op).isTrue();
            replayed += r.replayed() ? 1 : 0;
            retried += r.attempts() > 1 ? 1 : 0;
        }
        assertThat(proxy.responsesDropped() - droppedBefore).isGreaterThan(50);
        assertThat(proxy.resets() - resetsBefore).isGreaterThan(10);
        assertThat(retried).isGreaterThan(100);
        assertThat(replayed).as("operations whose result came back as a replay").isGreaterThan(50);
    }

    @Test
    @DisplayName("C8/C1: a declarative @IdempotentCall method retried through the faults keeps its key; "
        + "one side effect per invocation")
    void declarativeClientKeepsItsKey() {
        OrdersClient orders = clientContext.getBean(OrdersClient.class);
        int replayed = 0;
        for (int i = 0; i < 60; i++) {
            int op = 10_000 + i;
            HttpResponse<String> response = orders.order(op, Map.of("amount", i));
            IdempotentResult<?> last = IdempotentCalls.lastResult().orElseThrow();
            assertThat(response.code()).isEqualTo(201);
            assertThat(response.body()).contains("\"op\":" + op).contains("\"execution\":1");
            assertThat(api().executions.get(op).get()).as("side effects of invocation %d", op).isEqualTo(1);
            assertThat(recorder().keysByPath.get("/chaos/orders/" + op))
                .as("keys the server saw for invocation %d", op).containsExactly("\"" + last.key() + "\"");
            replayed += last.replayed() ? 1 : 0;
        }
        assertThat(replayed).isGreaterThan(0);
    }
}
