package dev.idempotency.client;

import dev.idempotency.client.DerivedKeysApi.Gateway;
import dev.idempotency.client.DerivedKeysApi.GatewayEdge;
import dev.idempotency.client.DerivedKeysApi.Order;
import dev.idempotency.client.DerivedKeysApi.Paid;
import dev.idempotency.client.DerivedKeysApi.Payments;
import dev.idempotency.client.internal.policy.Keys;
import dev.idempotency.context.OperationContext;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CONTRACT C11: inside an operation under the filter, the client SDK sends downstream a key
 * derived from the operation and the call's step, so an operation that runs again (a released
 * 5xx, a takeover) charges the gateway once. Both services run under the real filter.
 */
@MicronautTest
@Property(name = "spec.name", value = "DerivedKeysTest")
class DerivedKeysTest {

    @Factory
    @Requires(property = "spec.name", value = "DerivedKeysTest")
    static class Clients {
        @Singleton
        @Named("c11")
        IdempotentClient c11(@Client("/") HttpClient http) {
            return IdempotentClient.create(http, IdempotentClientConfig.custom().name("c11").budgetCapacity(10_000).build());
        }

        @Singleton
        @Named("c11-underived")
        IdempotentClient underived(@Client("/") HttpClient http) {
            return IdempotentClient.create(http, IdempotentClientConfig.custom().name("c11-underived")
                .deriveKeys(false).budgetCapacity(10_000).build());
        }
    }

    @Inject
    @Client("/")
    HttpClient http;

    @Inject
    Gateway gateway;

    @Inject
    GatewayEdge edge;

    @Inject
    Payments payments;

    @Inject
    @Named("c11")
    IdempotentClient client;

    /** Sends the edge's request once with {@code key}; @return its status and body (a 5xx too) */
    private HttpResponse<Paid> pay(String route, String key, Order order, int fail, Map<String, String> headers) {
        var request = HttpRequest.POST("/c11/payments/" + route, order).header("Idempotency-Key", key)
            .header("X-Fail", Integer.toString(fail));
        headers.forEach(request::header);
        try {
            return http.toBlocking().exchange(request, Paid.class);
        } catch (HttpClientResponseException e) {
            return (HttpResponse<Paid>) e.getResponse().getBody(Paid.class).map(p -> HttpResponse.status(e.getStatus()).body(p))
                .orElseThrow(() -> e);
        }
    }

    private List<String> keysAtGateway(String order, int from) {
        // the gateway's edge sees every attempt in order; this test's requests are sequential
        return new ArrayList<>(edge.keys.subList(from, edge.keys.size()));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"programmatic", "declarative", "async", "declarative-async", "named", "declarative-named"})
    @DisplayName("C11: an operation that runs again after its released 5xx sends the gateway the same key, and is charged once")
    void releasedFiveHundredChargesOnce(String route) {
        String order = "o-" + route + "-" + UUID.randomUUID();
        int seen = edge.keys.size();

        HttpResponse<Paid> first = pay(route, UUID.randomUUID().toString() + "-k", new Order(order, 1200), 1, Map.of());
        assertThat(first.code()).isEqualTo(500);
        assertThat(gateway.charges(order)).isEqualTo(1);
        List<String> keys = keysAtGateway(order, seen);
        assertThat(keys).hasSize(1);
        assertThat(keys.get(0)).startsWith("\"" + OperationContext.DERIVED_KEY_PREFIX);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"programmatic", "declarative", "async", "declarative-async", "named", "declarative-named"})
    @DisplayName("C11: the retry of the operation reaches the gateway with the first execution's key, answered by replay")
    void retryIsReplayedDownstream(String route) {
        String order = "o-" + route + "-" + UUID.randomUUID();
        String key = "edge-" + UUID.randomUUID();
        int seen = edge.keys.size();

        assertThat(pay(route, key, new Order(order, 1200), 1, Map.of()).code()).isEqualTo(500);
        HttpResponse<Paid> retried = pay(route, key, new Order(order, 1200), 1, Map.of());

        assertThat(retried.code()).isEqualTo(201);
        assertThat(gateway.charges(order)).as("charges for one operation").isEqualTo(1);
        List<String> keys = keysAtGateway(order, seen);
        assertThat(keys).hasSize(2);
        assertThat(keys.get(1)).isEqualTo(keys.get(0));
        assertThat(retried.body().replayed()).containsExactly(true);
    }

    @Test
    @DisplayName("C11: the derived key is the operation's and the step's: an explicit step name, two operations, two occurrences")
    void keysDifferPerStepAndOperation() {
        String orderA = "o-steps-" + UUID.randomUUID();
        String orderB = "o-steps-" + UUID.randomUUID();
        int seen = edge.keys.size();
        pay("named", "edge-a-" + orderA, new Order(orderA, 10), 0, Map.of());
        pay("programmatic", "edge-a-" + orderA, new Order(orderA, 10), 0, Map.of()); // another route: another scope
        pay("named", "edge-b-" + orderB, new Order(orderB, 10), 0, Map.of());
        List<String> keys = keysAtGateway(orderA, seen);
        assertThat(keys).hasSize(3).doesNotHaveDuplicates();

        // two calls of one method and path in one execution: #1 and #2, again the same on the retry
        String order = "o-two-" + UUID.randomUUID();
        String key = "edge-two-" + UUID.randomUUID();
        seen = edge.keys.size();
        assertThat(pay("two-charges", key, new Order(order, 5), 1, Map.of()).code()).isEqualTo(500);
        HttpResponse<Paid> retried = pay("two-charges", key, new Order(order, 5), 1, Map.of());
        List<String> twice = keysAtGateway(order, seen);
        assertThat(twice).hasSize(4);
        assertThat(twice.get(0)).isNotEqualTo(twice.get(1));
        assertThat(twice.subList(2, 4)).isEqualTo(twice.subList(0, 2));
        assertThat(gateway.charges(order)).isEqualTo(2);
        assertThat(retried.body().replayed()).containsExactly(true, true);
    }

    @Test
    @DisplayName("C11: a key the caller gives wins over the derived one")
    void explicitKeyWins() {
        String order = "o-explicit-" + UUID.randomUUID();
        String downstream = "caller-" + UUID.randomUUID();
        int seen = edge.keys.size();
        HttpResponse<Paid> paid = pay("explicit", "edge-" + order, new Order(order, 7), 0, Map.of("X-Downstream-Key", downstream));
        assertThat(paid.body().keys()).containsExactly(downstream);
        assertThat(keysAtGateway(order, seen)).containsExactly("\"" + downstream + "\"");
    }

    @Test
    @DisplayName("C11: with derivation off, each execution sends a fresh key (and the gateway charges again)")
    void derivationOff() {
        String order = "o-off-" + UUID.randomUUID();
        String key = "edge-" + UUID.randomUUID();
        int seen = edge.keys.size();
        pay("underived", key, new Order(order, 7), 1, Map.of());
        pay("underived", key, new Order(order, 7), 1, Map.of());
        List<String> keys = keysAtGateway(order, seen);
        assertThat(keys).hasSize(2).doesNotHaveDuplicates();
        assertThat(keys).noneMatch(k -> k.contains(OperationContext.DERIVED_KEY_PREFIX));
        assertThat(gateway.charges(order)).isEqualTo(2);
    }

    @Test
    @DisplayName("C11: outside an operation nothing changes: a UUIDv4 per call; a caller key of the derived form is refused")
    void outsideAnOperation() {
        IdempotentResult<DerivedKeysApi.Charge> one = client.execute(
            IdempotentRequest.post("/c11/gateway/charges", new Order("o-outside", 1)), Argument.of(DerivedKeysApi.Charge.class));
        assertThat(UUID.fromString(one.key()).version()).isEqualTo(4);

        assertThatThrownBy(() -> client.execute(IdempotentRequest.post("/c11/gateway/charges", new Order("o-x", 1))
            .key(OperationContext.DERIVED_KEY_PREFIX + UUID.randomUUID()), Argument.of(DerivedKeysApi.Charge.class)))
            .isInstanceOf(InvalidIdempotencyKeyException.class)
            .hasMessageContaining("reserved for keys the SDK derives");
    }

    @Test
    @DisplayName("C11: a blank or overlong step name is refused where it is given")
    void badStepNames() {
        assertThatThrownBy(() -> IdempotentRequest.post("/x", null).step(" "))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must not be blank");
        assertThatThrownBy(() -> IdempotentRequest.post("/x", null).step("s".repeat(201)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 200 characters");
    }

    @Test
    @DisplayName("C11: the same operation derives the same key in another context, as on another instance")
    void derivationIsStable() {
        OperationContext a = OperationContext.start("f".repeat(64));
        OperationContext b = OperationContext.start("f".repeat(64));
        String[] keys = new String[2];
        try (PropagatedContext.Scope ignored = PropagatedContext.getOrEmpty().plus(a).propagate()) {
            keys[0] = Keys.choose(null, null, "POST", "/charges", client.config()).key();
        }
        try (PropagatedContext.Scope ignored = PropagatedContext.getOrEmpty().plus(b).propagate()) {
            keys[1] = Keys.choose(null, null, "POST", "/charges", client.config()).key();
        }
        assertThat(keys[0]).isEqualTo(keys[1]).isEqualTo(a.derivedKey("POST /charges#1"));
        assertThat(Keys.validate(keys[0], KeyFormat.BARE)).isEqualTo(keys[0]);
    }

    @Test
    @DisplayName("C11: 1,000 operations run again after released 5xx, and 20 after takeovers, reach the gateway with one key per step")
    void thousandOperations() throws Exception {
        int seen = edge.keys.size();
        int before = gateway.charges.get();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<Future<Integer>> done = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                int n = i;
                done.add(pool.submit(() -> {
                    String key = "bulk-" + n + "-" + UUID.randomUUID();
                    Order order = new Order("o-bulk-" + n, n);
                    int first = pay("programmatic", key, order, 1, Map.of()).code();
                    int second = pay("programmatic", key, order, 1, Map.of()).code();
                    return first * 1000 + second;
                }));
            }
            // takeovers: the first execution charges, then outlives its one-second lease; the retry
            // takes over while it still runs
            List<Future<int[]>> takeovers = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                int n = i;
                takeovers.add(pool.submit(() -> {
                    String key = "takeover-" + n + "-" + UUID.randomUUID();
                    Order order = new Order("o-takeover-" + n, n);
                    CompletableFuture<Integer> first = CompletableFuture.supplyAsync(
                        () -> pay("takeover", key, order, 0, Map.of()).code());
                    TimeUnit.MILLISECONDS.sleep(1_200);
                    int second = pay("takeover", key, order, 0, Map.of()).code();
                    return new int[] {first.get(10, TimeUnit.SECONDS), second};
                }));
            }
            for (Future<Integer> f : done) {
                assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(500 * 1000 + 201);
            }
            for (Future<int[]> f : takeovers) {
                assertThat(f.get(60, TimeUnit.SECONDS)).containsExactly(201, 201);
            }
        } finally {
            pool.shutdownNow();
        }
        List<String> keys = new ArrayList<>(edge.keys.subList(seen, edge.keys.size()));
        Map<String, Integer> perKey = new HashMap<>();
        keys.forEach(k -> perKey.merge(k, 1, Integer::sum));
        assertThat(keys).hasSize(2 * 1_020);
        assertThat(perKey).hasSize(1_020);
        assertThat(new HashSet<>(perKey.values())).containsExactly(2);
        // every repeat was a replay at the gateway: one charge per operation
        assertThat(gateway.charges.get() - before).isEqualTo(1_020);
        Set<String> orders = new HashSet<>();
        for (int i = 0; i < 1_000; i++) {
            orders.add("o-bulk-" + i);
        }
        assertThat(orders).allMatch(o -> gateway.charges(o) == 1);
    }
}
