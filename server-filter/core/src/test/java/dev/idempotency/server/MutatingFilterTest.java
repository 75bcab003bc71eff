package dev.idempotency.server;

import dev.idempotency.testsupport.Http;

import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.filter.FilterContinuation;
import io.micronaut.http.filter.ServerFilterPhase;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Regression: a filter ahead of ours that replaces the request with a wrapper (as tracing and
 * decorating filters do) hands us a request that is not the server's own. The body must still
 * be fingerprinted (S7, S9), never hashed as empty.
 */
@MicronautTest
@Property(name = "spec.name", value = "MutatingFilterTest")
class MutatingFilterTest {

    @ServerFilter("/mutated/**")
    @Requires(property = "spec.name", value = "MutatingFilterTest")
    static class HeaderEnrichingFilter implements Ordered {
        @RequestFilter
        @io.micronaut.scheduling.annotation.ExecuteOn(io.micronaut.scheduling.TaskExecutors.BLOCKING)
        @SuppressWarnings({"unchecked", "rawtypes"})
        void enrich(HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation) {
            continuation.request(new io.micronaut.http.HttpRequestWrapper((HttpRequest) request) {
                @Override
                public String toString() {
                    return "traced " + super.toString();
                }
            });
            continuation.proceed();
        }

        @Override
        public int getOrder() {
            return ServerFilterPhase.TRACING.order();
        }
    }

    @Controller("/mutated")
    @Requires(property = "spec.name", value = "MutatingFilterTest")
    static class Api {
        final AtomicInteger executions = new AtomicInteger();

        // Micronaut 4.10 cannot bind @Body from a replaced request, so this handler takes none;
        // the filter must still fingerprint the body the client sent.
        @Post("/orders")
        @Idempotent
        Map<String, Object> order() {
            return Map.of("execution", executions.incrementAndGet());
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    Api api;

    @Test
    @DisplayName("S9: behind a request-mutating filter, another payload with the same key is still 422")
    void mutatedRequestKeepsItsBody() {
        Http http = new Http(server.getURI());
        String k = "\"" + UUID.randomUUID() + "\"";
        HttpResponse<byte[]> first = http.postJson("/mutated/orders", k, "{\"amount\":1}");
        assertThat(first.statusCode()).as(new String(first.body(), StandardCharsets.UTF_8)).isEqualTo(200);
        HttpResponse<byte[]> other = http.postJson("/mutated/orders", k, "{\"amount\":999}");
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(new String(other.body(), StandardCharsets.UTF_8)).contains("idempotency-key-reused");
        HttpResponse<byte[]> retry = http.postJson("/mutated/orders", k, "{\"amount\":1}");
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(api.executions.get()).isEqualTo(1);
    }
}
