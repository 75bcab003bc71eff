package dev.idempotency.messaging;

/**
 * A consumer's work that joins the idempotency store's database transaction (CONTRACT M5, the
 * inbox pattern, PostgreSQL): the message id is recorded in the same transaction as the
 * handler's own writes (repositories, {@code @Transactional} methods, JDBC through the
 * application's {@code DataSource} on the store's datasource), so a crash anywhere rolls both
 * back and the redelivery runs it once. It runs, and may block, on the store's transactional
 * thread.
 */
@FunctionalInterface
public interface TransactionalMessageHandler {

    /**
     * @throws RuntimeException to roll back: the message comes back later, up to the consumer's
     *                          {@code max-attempts}, then it is dead-lettered with the reason
     */
    void handle(ReceivedMessage message);
}
