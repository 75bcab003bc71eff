// tag::consumer[]
package dev.idempotency.examples.ledger;

import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import io.micronaut.json.JsonMapper;
import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Named;
import jakarta.inject.Singleton;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Books each {@code payment.captured} into the {@link Ledger}: the handler of the consumer
 * {@code ledger} ({@code idempotency.rabbitmq.consumers.ledger.*} in {@code application.properties}, or
 * {@code idempotency.kafka.consumers.ledger.*} in {@code application-kafka.properties}).
 * It knows nothing about duplicates: the idempotent consumer around it runs it once per message
 * id, however often the broker delivers the message.
 */
@Singleton
@Named("ledger")
final class LedgerConsumer implements MessageHandler {

    @Serdeable
    record PaymentCaptured(String payment, long amount, String currency) {
    }

    private final Ledger ledger;
    private final JsonMapper json;

    LedgerConsumer(Ledger ledger, JsonMapper json) {
        this.ledger = ledger;
        this.json = json;
    }

    @Override
    public CompletionStage<Void> handle(ReceivedMessage message) {
        try {
            PaymentCaptured captured = json.readValue(message.body(), PaymentCaptured.class);
            ledger.book(new Ledger.Entry(captured.payment(), captured.amount(), captured.currency(), message.messageId()));
            return CompletableFuture.completedFuture(null);
        } catch (IOException e) {
            // a body that is not a payment.captured: retried, then dead-lettered with this reason
            return CompletableFuture.failedFuture(e);
        }
    }
}
// end::consumer[]
