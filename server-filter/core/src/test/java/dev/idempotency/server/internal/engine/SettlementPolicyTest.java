package dev.idempotency.server.internal.engine;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.NoopIdempotencyMetrics;
import static org.assertj.core.api.Assertions.assertThat;

import io.micronaut.http.HttpAttributes;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.simple.SimpleHttpRequest;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** CONTRACT S14: which results release the key rather than being stored. */
class SettlementPolicyTest {

    private static Settlement settlement(boolean replayHandledExceptions) {
        IdempotencyConfigurationProperties config = new IdempotencyConfigurationProperties();
        config.setReplayHandledExceptions(replayHandledExceptions);
        return new Settlement(config, null, null, null, new NoopIdempotencyMetrics());
    }

    private static SimpleHttpRequest<String> request() {
        return new SimpleHttpRequest<>(HttpMethod.POST, "/orders", "{}");
    }

    @Test
    @DisplayName("S14: 2xx and 4xx are stored, 5xx and the configured statuses release")
    void byStatus() {
        Settlement s = settlement(false);
        assertThat(s.releases(request(), HttpResponse.ok())).isFalse();
        assertThat(s.releases(request(), HttpResponse.status(io.micronaut.http.HttpStatus.CONFLICT))).isFalse();
        assertThat(s.releases(request(), HttpResponse.serverError())).isTrue();
        assertThat(s.releases(request(), HttpResponse.status(io.micronaut.http.HttpStatus.TOO_MANY_REQUESTS)))
            .isTrue();
    }

    @Test
    @DisplayName("S14: a response made from an exception releases, whether the response or the request carries it")
    void handledExceptions() {
        Settlement s = settlement(false);
        MutableHttpResponse<?> onResponse = HttpResponse.badRequest();
        onResponse.setAttribute(HttpAttributes.EXCEPTION, new IllegalArgumentException("declined"));
        SimpleHttpRequest<String> onRequest = request();
        onRequest.setAttribute(HttpAttributes.EXCEPTION, new IllegalArgumentException("declined"));

        assertThat(s.releases(request(), onResponse)).isTrue();
        assertThat(s.releases(onRequest, HttpResponse.badRequest())).isTrue();
        assertThat(settlement(true).releases(request(), onResponse)).isFalse();
        assertThat(settlement(true).releases(onRequest, HttpResponse.badRequest())).isFalse();

        MutableHttpResponse<?> notAnException = HttpResponse.badRequest();
        notAnException.setAttribute(HttpAttributes.EXCEPTION, "declined");
        assertThat(s.releases(request(), notAnException)).isFalse();
    }
}
