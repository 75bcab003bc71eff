package dev.idempotency.examples.payments;

import dev.idempotency.testsupport.Http;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S4: a webhook sender's own delivery id as the key. The card gateway's events are
 * redelivered until a 2xx, under one {@code webhook-id}: handled once; a forged delivery (a bad
 * signature) is refused without taking the id of the genuine one.
 */
@MicronautTest
class GatewayWebhooksTest {

    @Inject
    EmbeddedServer server;
    @Inject
    GatewayWebhooks webhooks;

    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    private HttpResponse<byte[]> deliver(String id, String event, String signature) {
        long now = Instant.now().getEpochSecond();
        String sig = signature != null ? signature
            : "v1," + Base64.getEncoder().encodeToString(webhooks.sign(id, now, event));
        return http.post("/webhooks/gateway", null, "application/json", event.getBytes(StandardCharsets.UTF_8),
            "webhook-id", id, "webhook-timestamp", Long.toString(now), "webhook-signature", sig);
    }

    @Test
    @DisplayName("S4: a delivery sent three times under its webhook-id is handled once, the redeliveries replayed")
    void redeliveriesAreHandledOnce() {
        String id = "msg_" + UUID.randomUUID();
        String event = "{\"type\":\"charge.disputed\",\"data\":{\"payment\":\"pay_1\"}}";
        int before = webhooks.handled().size();

        HttpResponse<byte[]> first = deliver(id, event, null);
        HttpResponse<byte[]> second = deliver(id, event, null);
        HttpResponse<byte[]> third = deliver(id, event, null);

        assertThat(first.statusCode()).isEqualTo(204);
        assertThat(second.statusCode()).isEqualTo(204);
        assertThat(third.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(webhooks.handled()).hasSize(before + 1);
    }

    @Test
    @DisplayName("S4/S14: a forged delivery is 401 and released, so the genuine one with its id still runs")
    void aForgedDeliveryDoesNotTakeTheId() {
        String id = "msg_" + UUID.randomUUID();
        String event = "{\"type\":\"charge.refunded\",\"data\":{\"payment\":\"pay_2\"}}";
        int before = webhooks.handled().size();

        HttpResponse<byte[]> forged = deliver(id, event, "v1," + Base64.getEncoder().encodeToString(new byte[32]));
        HttpResponse<byte[]> genuine = deliver(id, event, null);

        assertThat(forged.statusCode()).isEqualTo(401);
        assertThat(genuine.statusCode()).isEqualTo(204);
        assertThat(genuine.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(webhooks.handled()).hasSize(before + 1);
        assertThat(http.post("/webhooks/gateway", null, "application/json", event.getBytes(StandardCharsets.UTF_8))
            .statusCode()).as("no webhook-id: 400 naming the header").isEqualTo(400);
    }
}
