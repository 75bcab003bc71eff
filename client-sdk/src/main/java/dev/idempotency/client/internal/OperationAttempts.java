package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.internal.policy.Keys;
import dev.idempotency.client.internal.policy.RetryBudget;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/** The programmatic API's operation: builds the request itself and decodes the final body. */
final class OperationAttempts<T> extends AttemptLoop<IdempotentResult<T>> {
    private final HttpClient http;
    final IdempotentRequest op;
    final Argument<T> bodyType;

    OperationAttempts(DefaultIdempotentClient client, HttpClient http, IdempotentRequest op, Argument<T> bodyType,
                      Keys.Chosen key) {
        super(client, key, RetryBudget.target(op.uri(), client.config().name()), op.replayable());
        this.http = http;
        this.op = op;
        this.bodyType = bodyType;
    }

    @Override
    String describe() {
        return op.method() + " " + op.uri();
    }

    @Override
    IdempotentResult<T> success(Sent sent, int number) {
        IdempotentResult<byte[]> response = sent.response();
        return new IdempotentResult<>(response.status(), response.headers(),
            response.bodyBytes(), decode(response), response.replayed(), number, key);
    }

    MutableHttpRequest<Object> request() {
        MutableHttpRequest<Object> request = HttpRequest.create(op.method(), op.uri().toString());
        op.headers().forEach((name, values) -> values.forEach(v -> request.header(name, v)));
        op.contentType().ifPresent(request::contentType);
        op.body().ifPresent(request::body);
        request.getHeaders().remove(config.headerName());
        request.header(config.headerName(), headerValue);
        return request;
    }

    @Override
    CompletableFuture<Sent> send(Duration timeout, int number) {
        HttpRequest<?> request = request();
        CompletableFuture<Sent> future = new CompletableFuture<>();
        AtomicReference<Subscription> subscription = new AtomicReference<>();
        Publisher<HttpResponse<byte[]>> publisher = http.exchange(request, Argument.of(byte[].class), Argument.of(byte[].class));
        publisher.subscribe(new Subscriber<>() {
            @Override
            public void onSubscribe(Subscription s) {
                subscription.set(s);
                if (future.isDone()) {
                    s.cancel();
                } else {
                    s.request(1);
                }
            }

            @Override
            public void onNext(HttpResponse<byte[]> response) {
                future.complete(new Sent(snapshot(response, number), null, false));
            }

            @Override
            public void onError(Throwable t) {
                if (t instanceof HttpClientResponseException e) {
                    future.complete(new Sent(snapshot(e.getResponse(), number), null, false));
                } else {
                    future.completeExceptionally(t);
                }
            }

            @Override
            public void onComplete() {
                future.completeExceptionally(new IOException("the connection closed without a response"));
            }
        });
        future.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((r, e) -> {
            if (e instanceof TimeoutException) {
                Subscription s = subscription.get();
                if (s != null) {
                    s.cancel();
                }
            }
        });
        return future;
    }

    @SuppressWarnings("unchecked")
    T decode(IdempotentResult<byte[]> response) {
        byte[] bytes = response.bodyBytes();
        Class<T> type = bodyType.getType();
        if (type == byte[].class) {
            return (T) bytes;
        }
        if (bytes.length == 0 || type == Void.class || type == void.class) {
            return null;
        }
        if (type == String.class || type == CharSequence.class) {
            return (T) new String(bytes, StandardCharsets.UTF_8);
        }
        try {
            return client.mapper().readValue(bytes, bodyType);
        } catch (IOException | RuntimeException e) {
            throw new IdempotentRequestException("the response body could not be decoded as " + bodyType,
                key, response.attempts(), response, null, e);
        }
    }
}
