package dev.idempotency.messaging;

import dev.idempotency.server.IdempotentOperation;


/**
 * Publishes messages through the outbox (CONTRACT M2, M3): a message is stored with the
 * caller's writes and sent to the broker afterwards by the relay, with the broker's
 * confirmation, retried with backoff, in order per ordering key. A broker that is down delays
 * the message; it does not lose it, and it does not fail the request that published it.
 *
 * <p>With the PostgreSQL store the outbox is a table written in the caller's transaction: in
 * transactional mode ({@code @Idempotent(transactional = true)}) the message commits or rolls
 * back with the request's record and its business rows. With the in-memory store (the
 * default, for one instance) it is kept in memory until sent.
 *
 * <p>Every message carries, besides the application's headers: its id (for RabbitMQ the
 * {@code message-id} property), {@value #KEY_HEADER} with the operation's
 * {@code Idempotency-Key} and {@value #RECORD_HEADER} with its record id, for tracing. A message
 * published while a request is handled carries that request's W3C trace context
 * ({@code traceparent}, and {@code tracestate} with it) unless the application set its own
 * (CONTRACT M11); consumers find it in {@link ReceivedMessage#traceparent()} and in the logging
 * MDC while their handler is called.
 */
public interface Outbox {

    /** The header with the publishing operation's {@code Idempotency-Key}. */
    String KEY_HEADER = "x-idempotency-key";

    /** The header with the publishing operation's record id. */
    String RECORD_HEADER = "x-idempotency-record";

    /**
     * Publishes {@code message} on behalf of the operation in progress
     * ({@link IdempotentOperation#current()}), with the id
     * {@link IdempotentOperation#messageId(String) messageId(step)}: a retry of the operation
     * publishes the same message again with the same id, which the outbox keeps once.
     *
     * @param step    the message's name within the operation, e.g. {@code payment.captured}
     * @param message what to send
     * @return the message id
     * @throws IllegalStateException when no operation is in progress (call it from a route under
     *                               the filter, or use {@link #publish(String, String, OutgoingMessage)})
     * @throws OutboxException       when the message cannot be stored
     */
    String publish(String step, OutgoingMessage message);

    /**
     * Publishes {@code message} for {@code operation}, e.g. from code the route calls on another
     * thread, or for an operation known from elsewhere.
     *
     * @return the message id, {@code operation.messageId(step)}
     */
    String publish(IdempotentOperation operation, String step, OutgoingMessage message);

    /**
     * Publishes {@code message} with an id of the caller's own, outside any operation. The id
     * must be stable across retries of what publishes it, or consumers cannot tell duplicates.
     *
     * @param messageId  the id, e.g. derived from a business key
     * @param idempotencyKey the key to put in {@value #KEY_HEADER}, or {@code null}
     * @return {@code messageId}
     */
    String publish(String messageId, String idempotencyKey, OutgoingMessage message);
}
