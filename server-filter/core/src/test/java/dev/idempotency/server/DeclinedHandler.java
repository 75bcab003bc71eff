package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.server.exceptions.ExceptionHandler;
import jakarta.inject.Singleton;

import java.util.Map;

/** The application's own answer to {@link TestApi.PaymentDeclined}: a 402, which is not a 5xx. */
@Singleton
@Requires(property = "spec.name", value = "IdempotencyFilterTest")
class DeclinedHandler implements ExceptionHandler<TestApi.PaymentDeclined, HttpResponse<?>> {

    @Override
    public HttpResponse<?> handle(HttpRequest request, TestApi.PaymentDeclined exception) {
        return HttpResponse.status(HttpStatus.PAYMENT_REQUIRED).body(Map.of("error", exception.getMessage()));
    }
}
