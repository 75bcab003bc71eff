package dev.idempotency.messaging;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Sends the outbox's messages to a broker (the SPI a broker module implements, e.g. RabbitMQ's).
 */
public interface MessageSender {

    /**
     * Sends {@code messages} in order, with the broker's confirmation.
     *
     * @return one outcome per message, in order: {@code null} when the broker confirmed it (it
     *     is safe to forget), else why it was not; the stage fails only when nothing could be
     *     sent at all (e.g. no connection), which counts as a failure of every message
     */
    CompletionStage<List<String>> send(List<OutboxRecord> messages);
}
