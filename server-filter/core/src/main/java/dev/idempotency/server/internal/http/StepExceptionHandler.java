package dev.idempotency.server.internal.http;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.StepNotRecordedException;
import dev.idempotency.server.internal.response.Responses;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.server.exceptions.ExceptionHandler;
import jakarta.inject.Singleton;

import java.time.Duration;

/**
 * Answers a handler that failed with {@link StepNotRecordedException} (CONTRACT S23) as a
 * completion that cannot be stored would be: 503 {@code idempotency-store-unavailable} with
 * {@code Retry-After} when the store did not record the step, 409
 * {@code idempotency-request-in-progress} when another execution took the operation over, and
 * 500 when the result was over the bound (the application's to fix). The filter then releases the
 * key (a 5xx) or finds its completion fenced (the takeover), keeping the recorded steps.
 */
@Internal
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class StepExceptionHandler implements ExceptionHandler<StepNotRecordedException, HttpResponse<?>> {

    private final Responses responses;

    public StepExceptionHandler(Responses responses) {
        this.responses = responses;
    }

    @Override
    public HttpResponse<?> handle(HttpRequest request, StepNotRecordedException exception) {
        return switch (exception.reason()) {
            case STORE_UNAVAILABLE -> responses.storeUnavailable();
            case LEASE_LOST -> responses.inProgress(Duration.ofSeconds(1));
            case TOO_LARGE -> HttpResponse.serverError()
                .contentType(MediaType.APPLICATION_JSON_PROBLEM_TYPE)
                .body("{\"title\":\"Internal Server Error\",\"status\":500,\"detail\":\"a durable step's result was"
                    + " over the server's bound; nothing was recorded\"}");
        };
    }
}
