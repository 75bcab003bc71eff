package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotencyKey;
import dev.idempotency.client.IdempotentCall;
import dev.idempotency.examples.client.PaymentsJson.Capture;
import dev.idempotency.examples.client.PaymentsJson.NewRefund;
import dev.idempotency.examples.client.PaymentsJson.Payment;
import dev.idempotency.examples.client.PaymentsJson.Refund;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.client.annotation.Client;

/**
 * The payments service as a declarative Micronaut client: the demo's captures and refunds go
 * through it (its creates go through the programmatic {@code IdempotentClient}). The service's
 * address is {@code micronaut.http.services.payments.url}; {@code @IdempotentCall("payments")}
 * takes its retry settings from the {@code IdempotentClient} bean named {@code payments} (or
 * {@code idempotency.client.payments.*}).
 */
// tag::declarative[]
@Client(id = "payments")
interface PaymentsApi {

    /**
     * One invocation is one operation: the SDK makes its Idempotency-Key once and retries the whole
     * invocation with it. A retry after a lost response gets the stored answer; nothing runs twice.
     */
    @Post("/payments/{id}/capture")
    @IdempotentCall("payments")
    Payment capture(@PathVariable String id, @Body Capture capture);

    /**
     * With the caller's own key: one the caller saved before the call (here: made from the payment
     * id), so that even a restarted process retries this refund with the same key.
     */
    @Post("/payments/{id}/refunds")
    @IdempotentCall("payments")
    Refund refund(@PathVariable String id, @Body NewRefund refund, @IdempotencyKey String key);
}
// end::declarative[]
