package dev.idempotency.messaging;

import java.util.concurrent.CompletionStage;

/**
 * What a consumer does with a message (CONTRACT M4): called at most once per message id to
 * completion, however often the broker delivers it. It may work asynchronously; it must not
 * block the thread it is called on (the broker client's). Work that blocks belongs on an
 * executor of the application's (e.g. {@code TaskExecutors.BLOCKING}), or in a
 * {@link TransactionalMessageHandler}.
 */
@FunctionalInterface
public interface MessageHandler {

    /**
     * @return completes when the message is processed; a failed stage (or an exception) means
     *     it was not: its id is released and the message comes back later, up to the consumer's
     *     {@code max-attempts}, then it is dead-lettered with the failure as the reason
     */
    CompletionStage<Void> handle(ReceivedMessage message);
}
