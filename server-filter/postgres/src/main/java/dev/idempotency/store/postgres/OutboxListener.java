package dev.idempotency.store.postgres;

import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The relay's wake-ups on PostgreSQL (CONTRACT M10): a thread of its own LISTENs on the outbox's
 * channel over a connection of its own (outside the pool: a LISTEN needs its session for as long
 * as it listens) and wakes the relay for every batch of notifications. A connection that breaks is
 * opened again after a second, and the relay is woken then too, since notifications sent meanwhile
 * are lost; the relay's poll covers the gap either way.
 */
final class OutboxListener implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxListener.class);
    private static final int WAIT_MILLIS = 500;
    private static final long RECONNECT_MILLIS = 1000;

    /** Opens the listening connection. */
    @FunctionalInterface
    interface Connector {
        Connection open() throws SQLException;
    }

    private final Connector connector;
    private final String channel;
    private final Runnable wake;
    private final Thread thread;
    private volatile boolean closed;
    private volatile Connection current;

    OutboxListener(Connector connector, String channel, Runnable wake) {
        this.connector = connector;
        this.channel = channel;
        this.wake = wake;
        this.thread = new Thread(this::run, "idempotency-outbox-listen");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void run() {
        boolean warned = false;
        while (!closed) {
            try (Connection c = connector.open()) {
                current = c;
                c.setAutoCommit(true);
                try (Statement s = c.createStatement()) {
                    s.execute("LISTEN \"" + channel + "\"");
                }
                PGConnection pg = c.unwrap(PGConnection.class);
                if (warned) {
                    LOG.info("idempotency outbox: listening for publishes again on {}", channel);
                    warned = false;
                }
                wake.run(); // what was published while it was not listening
                while (!closed) {
                    var notifications = pg.getNotifications(WAIT_MILLIS);
                    if (notifications != null && notifications.length > 0) {
                        wake.run();
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (closed) {
                    return;
                }
                if (!warned) {
                    LOG.warn("idempotency outbox: cannot listen for publishes on {} ({}); the relay polls meanwhile,"
                        + " and listening is tried again every {} ms", channel, e.toString(), RECONNECT_MILLIS);
                    warned = true;
                }
                try {
                    Thread.sleep(RECONNECT_MILLIS); // its own thread, waiting for the database to come back
                } catch (InterruptedException ie) {
                    return;
                }
            } finally {
                current = null;
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        Connection c = current;
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing anyway
            }
        }
        thread.interrupt();
    }
}
