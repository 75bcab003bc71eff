package com.example.orders;

import com.example.orders.Orders.NewOrder;
import com.example.orders.Orders.Order;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentResult;
import io.micronaut.core.annotation.NonNull;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import jakarta.inject.Inject;
import jakarta.inject.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quick start works as its page says: the API on a real server, the declarative caller
 * through real HTTP, and the contract a caller sees (a replay, not a second order; 422 for a
 * reused key; 400 without a key).
 */
@MicronautTest(environments = {Application.ENVIRONMENT, "caller"})
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QuickstartTest implements TestPropertyProvider {

    @Inject
    EmbeddedServer server;
    @Inject
    OrdersClient orders;
    @Inject
    OrdersController controller;
    @Inject
    @Named("orders")
    IdempotentClient ordersClient;

    private final HttpClient http = HttpClient.newHttpClient();

    @Override
    public @NonNull Map<String, String> getProperties() {
        int port = freePort();
        // one context plays both sides: the API's environment and the caller's, whose
        // idempotency.enabled=false (a caller needs no filter) is turned back on for the API
        return Map.of("micronaut.server.port", String.valueOf(port),
            "micronaut.http.services.orders.url", "http://localhost:" + port,
            "idempotency.enabled", "true");
    }

    @Test
    void theCallerPlacesAnOrderOnce() {
        int before = controller.placed();
        Order order = orders.place(new NewOrder("book", 2));
        assertEquals("book", order.item());
        assertEquals(2, order.quantity());
        assertEquals(before + 1, controller.placed());
        Order another = orders.place(new NewOrder("book", 2));
        assertNotEquals(order.id(), another.id(), "every invocation is a new operation with a new key");
    }

    @Test
    void theProgrammaticCallerPlacesAnOrderOnce() {
        int before = controller.placed();
        IdempotentResult<Order> placed = PlaceOrderProgrammatically.place(ordersClient, new NewOrder("lamp", 1));
        assertEquals(201, placed.status());
        assertEquals("lamp", placed.body().orElseThrow().item());
        assertEquals(1, placed.attempts());
        assertEquals(before + 1, controller.placed());
    }

    @Test
    void aRetryWithTheSameKeyGetsTheSameAnswerAndNoSecondOrder() throws Exception {
        String key = "\"" + UUID.randomUUID() + "\"";
        HttpResponse<String> first = post(key, "{\"item\":\"pen\",\"quantity\":1}");
        int placed = controller.placed();
        HttpResponse<String> retry = post(key, "{\"item\":\"pen\",\"quantity\":1}");
        assertEquals(201, first.statusCode());
        assertEquals(201, retry.statusCode());
        assertEquals(first.body(), retry.body());
        assertEquals("true", retry.headers().firstValue("Idempotent-Replayed").orElse(null));
        assertEquals(placed, controller.placed(), "the retry placed no order");

        HttpResponse<String> reused = post(key, "{\"item\":\"pen\",\"quantity\":5}");
        assertEquals(422, reused.statusCode());
        assertTrue(reused.body().contains("idempotency-key-reused"), reused.body());

        HttpResponse<String> noKey = post(null, "{\"item\":\"pen\",\"quantity\":1}");
        assertEquals(400, noKey.statusCode());
        assertTrue(noKey.body().contains("idempotency-key-missing"), noKey.body());
    }

    private HttpResponse<String> post(String key, String json) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(server.getURL() + "/orders"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
