package dev.idempotency.client;

import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.ClientFilter;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ResponseFilter;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.retry.annotation.Retryable;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/** The declarative clients and test filters of {@link DeclarativeClientIntegrationTest}. */
final class DeclarativeTestClients {

    private DeclarativeTestClients() {
    }

    /** Uses the settings of the IdempotentClient bean named "decl" (fake clock, recording sleeper). */
    @Client("/")
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    interface PaymentsClient {

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        Payment flaky(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        HttpResponse<Payment> flakyResponse(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/payments")
        @IdempotentCall("decl")
        HttpResponse<Payment> create(@Body NewPayment body, @Nullable @IdempotencyKey String key);

        @Post("/d/slow")
        @IdempotentCall("decl")
        String slow(@Body NewPayment body, @IdempotencyKey String key);

        @Post("/d/bad-request")
        @IdempotentCall("decl")
        Payment badRequest(@Body NewPayment body);

        @Post("/d/trap/annotated")
        @IdempotentCall("decl")
        HttpResponse<Payment> trap(@Body NewPayment body);

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        CompletableFuture<Payment> async(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        org.reactivestreams.Publisher<Payment> publisher(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/bad-request")
        @IdempotentCall("decl")
        java.util.concurrent.CompletionStage<Payment> asyncBadRequest(@Body NewPayment body);

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        reactor.core.publisher.Mono<Payment> mono(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/flaky/{failures}")
        @IdempotentCall("decl")
        reactor.core.publisher.Flux<Payment> flux(@PathVariable int failures, @Body NewPayment body);

        @Post("/d/payments")
        @IdempotentCall
        Payment createWithDefaults(@Body NewPayment body);
    }

    /**
     * THE TRAP: Micronaut's own @Retryable re-invokes the method, Micronaut binds a new request per
     * attempt, and {@link NaiveKeyFilter} mints a key per request, so each retry carries a NEW key.
     */
    @Client("/")
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    interface NaiveClient {

        @Post("/d/trap/naive")
        @Retryable(attempts = "3", delay = "1ms")
        HttpResponse<Payment> trap(@Body NewPayment body);
    }

    /** What NOT to do: a filter that makes the key runs once per attempt, so it makes one key per attempt. */
    @ClientFilter("/d/trap/naive")
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    static final class NaiveKeyFilter {
        @RequestFilter
        public void mintKey(MutableHttpRequest<?> request) {
            request.header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"");
        }
    }

    /** Loses the next N responses AFTER the server answered (as a connection reset would): the client sees an I/O error. */
    @ClientFilter("/d/trap/**")
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    static final class LossyNetwork {
        final AtomicInteger dropNext = new AtomicInteger();

        @ResponseFilter
        public void maybeLose(HttpRequest<?> request, HttpResponse<?> response) {
            if (dropNext.getAndDecrement() > 0) {
                throw new UncheckedIOException(new IOException("simulated connection reset after the server answered "
                    + response.code()));
            }
        }
    }
}
