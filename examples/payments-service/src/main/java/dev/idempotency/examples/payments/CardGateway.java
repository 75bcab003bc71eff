package dev.idempotency.examples.payments;

// tag::imports[]
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentRequest;
// end::imports[]
import dev.idempotency.client.IdempotentClientConfig;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Singleton;

import java.time.Duration;

/**
 * The card gateway the payments service charges through (the example's second hop), called with
 * the client SDK. Inside a request under the filter, the SDK sends a key derived from the payments
 * operation and the step {@code charge-card} (CONTRACT C11): every execution of one capture, on
 * any instance, sends the gateway the same key, so the gateway charges once however often the
 * capture runs. Present only when {@code payments.gateway.url} is set.
 */
@Singleton
@Requires(property = "payments.gateway.url")
final class CardGateway {

    private static final Argument<Charge> CHARGE = Argument.of(Charge.class);

    private final IdempotentClient client;

    CardGateway(@Client("${payments.gateway.url}") HttpClient http) {
        this.client = IdempotentClient.create(http, IdempotentClientConfig.custom().name("card-gateway")
            .maxAttempts(8).maxDelay(Duration.ofSeconds(2)).deadline(Duration.ofSeconds(20)).build());
    }

    /**
     * A charge the gateway made.
     *
     * @param id       the gateway's id for it
     * @param payment  the payment it is for
     * @param amount   in minor units
     * @param currency ISO 4217
     */
    @Serdeable
    record Charge(String id, String payment, long amount, String currency) {
    }

    @Serdeable
    record ChargeRequest(String payment, long amount, String currency) {
    }

    /**
     * @return the charge, made once per payments operation
     * @throws PaymentException 503 when the gateway does not answer within the client's retries
     */
    // tag::charge[]
    Charge charge(Payment payment, long amount) {
        try {
            return client.execute(IdempotentRequest.post("/charges",
                    new ChargeRequest(payment.id(), amount, payment.currency())).step("charge-card"), CHARGE)
                .body().orElseThrow();
        } catch (RuntimeException e) {
            throw new PaymentException(503, "gateway-unavailable", "The card gateway is unavailable",
                "The card could not be charged (" + e.getMessage() + "). Retry the capture with the same"
                    + " Idempotency-Key: the gateway is sent the same key, so a charge it made is not repeated.");
        }
    }
    // end::charge[]
}
