package dev.idempotency.kafka;

import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.server.Idempotent;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TestKafka;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Trace context through the outbox (CONTRACT M11), end to end on Kafka: a request with a W3C
 * {@code traceparent} (and {@code tracestate}) publishes under the filter; the message carries
 * both, and the consumer finds the {@code traceparent} in {@link ReceivedMessage#traceparent()} and
 * in the MDC while its handler runs. A malformed {@code traceparent} is not carried.
 */
class TraceContextOnKafkaTest {

    static final String SPEC = "TraceContextOnKafkaTest";
    /** Per message body: what the handler saw, as "traceparent|mdc|tracestate". */
    static final Map<String, String> SEEN = new ConcurrentHashMap<>();

    @Controller("/traced")
    @Requires(property = "spec.name", value = SPEC)
    static class Traced {
        private final Outbox outbox;
        private final String topic;

        Traced(Outbox outbox, @Value("${test.topic}") String topic) {
            this.outbox = outbox;
            this.topic = topic;
        }

        @Post
        @Idempotent
        HttpResponse<String> publish(@Body Map<String, String> body) {
            outbox.publish("traced", OutgoingMessage.json(topic, "", "{\"n\":\"" + body.get("n") + "\"}"));
            return HttpResponse.created("published");
        }
    }

    @Singleton
    @Named("traced")
    @Requires(property = "spec.name", value = SPEC)
    static class Handler implements MessageHandler {
        @Override
        public CompletableFuture<Void> handle(ReceivedMessage message) {
            SEEN.put(message.bodyText(), message.traceparent().orElse("-") + "|" + MDC.get("traceparent") + "|"
                + message.header("tracestate").orElse("-"));
            return CompletableFuture.completedFuture(null);
        }
    }

    private ApplicationContext context;

    @AfterEach
    void stop() {
        if (context != null) {
            context.close();
        }
        Stores.removeCreated();
    }

    @Test
    @DisplayName("M11: the request's traceparent and tracestate travel through the outbox into the consumer's context")
    void traceparentTravels() throws Exception {
        String bootstrap = TestKafka.bootstrapServers();
        String topic = "traced-" + UUID.randomUUID();
        TestKafka.createTopics(bootstrap, 1, topic);
        Map<String, Object> p = new HashMap<>(Stores.MEMORY.properties());
        p.put("spec.name", SPEC);
        p.put("test.topic", topic);
        p.put("micronaut.server.port", -1);
        p.put("idempotency.kafka.bootstrap-servers", bootstrap);
        p.put("idempotency.kafka.consumers.traced.topics", topic);
        p.put("idempotency.outbox.poll-interval", "50ms");
        context = ApplicationContext.run(p);
        EmbeddedServer server = context.getBean(EmbeddedServer.class).start();
        Http http = new Http(URI.create("http://127.0.0.1:" + server.getPort()));
        String parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assertThat(http.postJson("/traced", UUID.randomUUID().toString(), "{\"n\":\"one\"}", "traceparent", parent,
            "tracestate", "congo=t61rcWkgMzE").statusCode()).isEqualTo(201);
        assertThat(http.postJson("/traced", UUID.randomUUID().toString(), "{\"n\":\"two\"}", "traceparent",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01").statusCode()).isEqualTo(201);
        assertThat(http.postJson("/traced", UUID.randomUUID().toString(), "{\"n\":\"three\"}").statusCode())
            .isEqualTo(201);
        Await.until("the three messages are consumed", () -> SEEN.size() >= 3);
        assertThat(SEEN.get("{\"n\":\"one\"}")).isEqualTo(parent + "|" + parent + "|congo=t61rcWkgMzE");
        assertThat(SEEN.get("{\"n\":\"two\"}")).as("an all-zero trace id is not a trace").isEqualTo("-|null|-");
        assertThat(SEEN.get("{\"n\":\"three\"}")).isEqualTo("-|null|-");
    }
}
