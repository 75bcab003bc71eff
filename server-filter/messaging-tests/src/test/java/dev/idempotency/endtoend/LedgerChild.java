package dev.idempotency.endtoend;

import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.messaging.TransactionalMessageHandler;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.runtime.Micronaut;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Named;
import jakarta.inject.Singleton;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A consumer application for the exactly-once runs (its settings come as system properties), which
 * tests kill with {@code kill -9} and start again. Its handler books each message as a row of
 * {@code <ledger.schema>.ledger}: in the consumer's transaction ({@code ledger.mode=transactional},
 * the inbox on PostgreSQL), or on a connection of its own after the fact ({@code ledger.mode=plain},
 * any store), where a kill between the row and the stored outcome can book a message twice.
 */
public final class LedgerChild {

    private LedgerChild() {
    }

    public static void main(String[] args) {
        Micronaut.build(args).mainClass(LedgerChild.class).start();
    }

    static void book(Connection c, String schema, ReceivedMessage m) throws SQLException {
        String[] keySeq = m.bodyText().split(":");
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema
            + ".ledger (message_id, ordering_key, seq) VALUES (?, ?, ?)")) {
            ps.setString(1, m.messageId());
            ps.setString(2, keySeq[0]);
            ps.setInt(3, Integer.parseInt(keySeq[1]));
            ps.executeUpdate();
        }
    }

    /** Books in the consumer's transaction: the row and the message id commit together. */
    @Singleton
    @Named("ledger")
    @Requires(property = "ledger.mode", value = "transactional")
    static final class InTransaction implements TransactionalMessageHandler {
        private final DataSource dataSource;
        private final String schema;

        InTransaction(DataSource dataSource, @Value("${ledger.schema}") String schema) {
            this.dataSource = dataSource;
            this.schema = schema;
        }

        @Override
        public void handle(ReceivedMessage message) {
            try {
                book(dataSource.getConnection(), schema, message); // the transaction's connection
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * Books on a connection of its own, off the consumer's thread: each of its four threads keeps
     * one (opening a PostgreSQL connection per message would make the run measure the server's
     * process forks), and drops it after a failure so the next message opens a fresh one.
     */
    @Singleton
    @Named("ledger")
    @Requires(property = "ledger.mode", value = "plain")
    static final class OnItsOwn implements MessageHandler, AutoCloseable {
        private final ExecutorService pool = Executors.newFixedThreadPool(4);
        private final ThreadLocal<Connection> connection = new ThreadLocal<>();
        private final Queue<Connection> opened = new ConcurrentLinkedQueue<>();
        private final String url;
        private final String user;
        private final String password;
        private final String schema;

        OnItsOwn(@Value("${ledger.url}") String url, @Value("${ledger.user}") String user,
                 @Value("${ledger.password:}") String password, @Value("${ledger.schema}") String schema) {
            this.url = url;
            this.user = user;
            this.password = password;
            this.schema = schema;
        }

        @Override
        public CompletionStage<Void> handle(ReceivedMessage message) {
            return CompletableFuture.runAsync(() -> {
                Connection c = connection.get();
                try {
                    if (c == null) {
                        c = DriverManager.getConnection(url, user, password);
                        opened.add(c);
                        connection.set(c);
                    }
                    book(c, schema, message);
                } catch (SQLException e) {
                    connection.remove();
                    closeQuietly(c);
                    throw new IllegalStateException(e);
                }
            }, pool);
        }

        private static void closeQuietly(Connection c) {
            if (c == null) {
                return;
            }
            try {
                c.close();
            } catch (SQLException ignored) {
                // it failed already; the next message opens another
            }
        }

        @PreDestroy
        @Override
        public void close() {
            pool.shutdown();
            opened.forEach(OnItsOwn::closeQuietly);
        }
    }
}
