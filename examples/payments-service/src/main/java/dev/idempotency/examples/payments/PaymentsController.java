package dev.idempotency.examples.payments;

import dev.idempotency.server.Idempotent;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.convert.exceptions.ConversionErrorException;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Error;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Patch;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.QueryValue;
import io.micronaut.json.JsonSyntaxException;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;

import java.net.URI;
import java.util.List;
import java.util.function.Supplier;

/**
 * The payments API. Every operation that changes state is {@link Idempotent}: the client sends
 * an {@code Idempotency-Key} header (one key per operation, the same key on every retry) and
 * the filter makes sure the operation happens at most once, replaying the first response to
 * retries. The handlers themselves are ordinary code.
 *
 * <p>Business errors are returned as responses, not thrown past the handler: the filter stores
 * and replays a 4xx response, but by default releases the key when the handler ends with an
 * exception (CONTRACT S14), so a thrown 422 would be re-executed on retry instead of replayed
 * (unless {@code idempotency.replay-handled-exceptions=true}).
 */
@Controller("/payments")
@ExecuteOn(TaskExecutors.BLOCKING)
final class PaymentsController {

    static final String PROBLEM_JSON = "application/problem+json";

    private final PaymentService payments;
    private final SideEffectLedger ledger;
    private final DemoDelay delay;

    PaymentsController(PaymentService payments, SideEffectLedger ledger, DemoDelay delay) {
        this.payments = payments;
        this.ledger = ledger;
        this.delay = delay;
    }

    // tag::idempotent-route[]
    /** Creates (authorizes) a payment: 201 with {@code Location} and the payment. */
    @Post
    @Idempotent
    HttpResponse<?> create(@Body @Nullable Requests.CreatePayment body,
                           @Header(DemoDelay.HEADER) @Nullable String demoDelay) {
        return mutate(demoDelay, () -> {
            Payment p = payments.create(body);
            return HttpResponse.created(p, URI.create("/payments/" + p.id()));
        });
    }
    // end::idempotent-route[]

    /** Captures all of the authorized amount, or the part given. */
    @Post("/{id}/capture")
    @Idempotent
    HttpResponse<?> capture(@PathVariable String id, @Body @Nullable Requests.Capture body,
                            @Header(DemoDelay.HEADER) @Nullable String demoDelay) {
        return mutate(demoDelay, () -> HttpResponse.ok(payments.capture(id, body)));
    }

    /** Refunds part or all of the captured amount: 201 with {@code Location} and the refund. */
    @Post("/{id}/refunds")
    @Idempotent
    HttpResponse<?> refund(@PathVariable String id, @Body @Nullable Requests.CreateRefund body,
                           @Header(DemoDelay.HEADER) @Nullable String demoDelay) {
        return mutate(demoDelay, () -> {
            Refund r = payments.refund(id, body);
            return HttpResponse.created(r, URI.create("/payments/" + id + "/refunds/" + r.id()));
        });
    }

    /** Changes the description and/or merges metadata. */
    @Patch("/{id}")
    @Idempotent
    HttpResponse<?> update(@PathVariable String id, @Body @Nullable Requests.UpdatePayment body,
                           @Header(DemoDelay.HEADER) @Nullable String demoDelay) {
        return mutate(demoDelay, () -> HttpResponse.ok(payments.update(id, body)));
    }

    @Get("/{id}")
    HttpResponse<?> get(@PathVariable String id) {
        return payments.find(id).<HttpResponse<?>>map(HttpResponse::ok)
            .orElseGet(() -> problem(PaymentException.notFound(id)));
    }

    @Get("/{id}/refunds/{refundId}")
    HttpResponse<?> getRefund(@PathVariable String id, @PathVariable String refundId) {
        return payments.find(id)
            .flatMap(p -> p.refunds().stream().filter(r -> r.id().equals(refundId)).findFirst())
            .<HttpResponse<?>>map(HttpResponse::ok)
            .orElseGet(() -> problem(new PaymentException(404, "refund-not-found", "No such refund",
                "Payment " + id + " has no refund " + refundId + ".")));
    }

    /**
     * Lists payments, newest first.
     *
     * @param customer only this customer's payments
     * @param limit    at most this many, 1 to 100 (default 20)
     */
    @Get
    HttpResponse<?> list(@QueryValue @Nullable String customer, @QueryValue(defaultValue = "20") int limit) {
        if (limit < 1 || limit > 100) {
            return problem(PaymentException.invalid("limit must be between 1 and 100."));
        }
        List<Payment> page = payments.list(customer, limit);
        return HttpResponse.ok(new PaymentList(page, page.size()));
    }

    /**
     * A page of payments.
     *
     * @param data  the payments, newest first
     * @param count how many are in {@code data}
     */
    @Serdeable
    record PaymentList(List<Payment> data, int count) {
    }

    /**
     * A body that is not JSON: 400 problem. Thrown while binding, before the handler runs; the
     * filter then releases the key (the request did nothing), so a corrected retry may reuse it.
     */
    @Error(JsonSyntaxException.class)
    HttpResponse<?> malformedJson(JsonSyntaxException e) {
        return problem(PaymentException.invalid("The body is not valid JSON."));
    }

    /** A JSON member of the wrong type, e.g. {@code "amount":"ten"}: 400 problem, released like above. */
    @Error(ConversionErrorException.class)
    HttpResponse<?> wrongType(ConversionErrorException e) {
        return problem(PaymentException.invalid("The body has a member of the wrong type: amount is a JSON number,"
            + " currency, description, customer and reason are strings, metadata is an object of strings."));
    }

    private HttpResponse<?> mutate(@Nullable String demoDelay, Supplier<MutableHttpResponse<?>> operation) {
        ledger.executed();
        try {
            delay.apply(demoDelay);
            return operation.get();
        } catch (PaymentException e) {
            ledger.rejected();
            return problem(e);
        }
    }

    static MutableHttpResponse<Problem> problem(PaymentException e) {
        return HttpResponse.<Problem>status(HttpStatus.valueOf(e.status()))
            .contentType(PROBLEM_JSON)
            .body(Problem.of(e));
    }
}
