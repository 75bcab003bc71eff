package dev.idempotency.client.internal.policy;

import dev.idempotency.client.IdempotentClientConfigurationProperties;
import dev.idempotency.client.ProblemDetails;
import io.micronaut.http.client.exceptions.HttpClientException;
import io.micronaut.http.client.exceptions.NoHostException;
import io.micronaut.http.client.exceptions.ReadTimeoutException;
import io.micronaut.http.client.exceptions.ResponseClosedException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.ConnectException;
import java.net.SocketException;
import java.util.concurrent.TimeoutException;

import static dev.idempotency.client.internal.policy.Classifier.Verdict.FAIL;
import static dev.idempotency.client.internal.policy.Classifier.Verdict.RETRY;
import static dev.idempotency.client.internal.policy.Classifier.Verdict.SUCCESS;
import static org.assertj.core.api.Assertions.assertThat;

class ClassifierTest {

    private static final ProblemDetails IN_PROGRESS = new ProblemDetails(
        "https://idempotency.dev/contract/#idempotency-request-in-progress", ProblemDetails.REQUEST_IN_PROGRESS,
        "Request with this Idempotency-Key in progress", "...", 409);
    private static final ProblemDetails REUSED = new ProblemDetails(null, ProblemDetails.KEY_REUSED, null, null, 422);

    @ParameterizedTest(name = "C4: {0} is retried")
    @ValueSource(ints = {408, 425, 429, 500, 502, 503, 504})
    void retried(int status) {
        assertThat(Classifier.classify(status, null, IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES)).isEqualTo(RETRY);
    }

    @ParameterizedTest(name = "C4: {0} is never retried")
    @ValueSource(ints = {400, 401, 402, 403, 404, 405, 410, 411, 412, 413, 415, 418, 422, 451, 501, 505})
    void neverRetried(int status) {
        assertThat(Classifier.classify(status, null, IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES)).isEqualTo(FAIL);
        assertThat(Classifier.classify(status, REUSED, IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES)).isEqualTo(FAIL);
    }

    @ParameterizedTest(name = "C4: {0} is the answer")
    @ValueSource(ints = {200, 201, 202, 204, 301, 304})
    void success(int status) {
        assertThat(Classifier.classify(status, null, IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES)).isEqualTo(SUCCESS);
    }

    @Test
    @DisplayName("C4: a 409 is retried only when it is the filter's in-progress problem, never a business conflict")
    void only409InProgressIsRetried() {
        var defaults = IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES;
        assertThat(Classifier.classify(409, IN_PROGRESS, defaults)).isEqualTo(RETRY);
        assertThat(Classifier.classify(409, null, defaults)).isEqualTo(FAIL);
        assertThat(Classifier.classify(409, new ProblemDetails(null, "payment-already-captured", null, null, 409), defaults))
            .isEqualTo(FAIL);
        assertThat(Classifier.classify(409, IN_PROGRESS, java.util.Set.of(503))).isEqualTo(FAIL);
    }

    @Test
    @DisplayName("C4: connection failures, resets and timeouts are retried; other client errors are not")
    void failures() {
        assertThat(Classifier.isRetryableFailure(new HttpClientException("Connect Error", new ConnectException("refused")))).isTrue();
        assertThat(Classifier.isRetryableFailure(new SocketException("Connection reset"))).isTrue();
        assertThat(Classifier.isRetryableFailure(new TimeoutException())).isTrue();
        assertThat(Classifier.isRetryableFailure(ReadTimeoutException.TIMEOUT_EXCEPTION)).isTrue();
        assertThat(Classifier.isRetryableFailure(new ResponseClosedException("closed"))).isTrue();
        assertThat(Classifier.isRetryableFailure(new NoHostException("no host"))).isFalse();
        assertThat(Classifier.isRetryableFailure(new IllegalStateException("bug"))).isFalse();
        assertThat(Classifier.reasonTag(new TimeoutException())).isEqualTo("timeout");
        assertThat(Classifier.reasonTag(new ConnectException())).isEqualTo("io");
    }
}
