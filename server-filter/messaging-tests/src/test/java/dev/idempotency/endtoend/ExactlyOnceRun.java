package dev.idempotency.endtoend;

import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.ChildJvm;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TestPostgres;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The exactly-once run (CONTRACT M4, M5, M8), the same on every broker: 10,000 deliveries of which
 * 20 % are duplicates (the same message id again), to {@link LedgerChild} consumers in JVMs of
 * their own. The faults, in this order: the consumer killed ({@code kill -9}) and started again
 * three times; a second consumer that joins and then leaves (a rebalance each way); the broker's
 * network path cut for 3 s. Then every distinct message is booked; the transactional consumer (the
 * inbox, PostgreSQL) books none twice; the plain one (Redis) may book twice only what a kill
 * interrupted between its write and its stored outcome, at most what it had in flight; and where
 * the broker promises per-key order under these faults, each key's messages are first booked in
 * order.
 */
final class ExactlyOnceRun {

    static final int DELIVERIES = 10_000;
    /** The rest, 1,666, are duplicates of earlier ones: 20 % of deliveries. */
    static final int DISTINCT = 8_334;
    static final int KEYS = 40;
    private static final int KILLS = 3;

    /** One broker's side of the run. */
    interface Wire {
        /** @return the broker's name, for the report */
        String name();

        /** Makes the destination (a topic, a queue) the run publishes to and consumes from. */
        void create(String destination) throws Exception;

        /** @return the consumer application's settings for this broker and destination, transactional or plain */
        Map<String, String> consumerProperties(String destination, boolean transactional);

        /** @return a publisher to {@code destination} for the run's producer thread */
        Publisher publisher(String destination) throws Exception;

        /** Takes the broker off the network (every connection reset, new ones refused). */
        void cut() throws Exception;

        /** Brings it back. */
        void restore() throws Exception;

        /** @return how many messages a killed consumer can have between its write and its stored outcome */
        int inFlightPerConsumer();

        /** @return whether the broker promises per-key order under kills and rebalances */
        boolean ordersPerKey();
    }

    /** Sends the run's deliveries; {@link #flush()} waits until the broker has every one sent so far. */
    interface Publisher extends AutoCloseable {
        void send(String key, String messageId, String body) throws Exception;

        void flush() throws Exception;

        @Override
        void close() throws Exception;
    }

    private ExactlyOnceRun() {
    }

    /**
     * @return the consumer settings the run gives every broker's consumer, under {@code prefix} (its
     *     {@code consumers.<name>.}): transactional or plain, a short lease so a killed consumer's holds end
     *     soon, short delays, and enough attempts that a cut never dead-letters
     */
    static Map<String, String> consumerSettings(String prefix, boolean transactional) {
        Map<String, String> props = new LinkedHashMap<>();
        props.put(prefix + "transactional", String.valueOf(transactional));
        props.put(prefix + "lease", "3s");
        props.put(prefix + "in-progress-delay", "500ms");
        props.put(prefix + "retry-delay", "200ms");
        props.put(prefix + "max-attempts", "1000");
        return props;
    }

    /** Runs the whole thing on {@code wire} with {@code store} (REDIS: plain consumer; POSTGRES: transactional). */
    static void run(Wire wire, Stores store, String destination) throws Exception {
        String ledger = TestPostgres.newSchema();
        try (Connection db = TestPostgres.server().connect()) {
            wire.create(destination);
            try (Statement s = db.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + ledger);
                s.execute("CREATE TABLE " + ledger + ".ledger (n bigserial PRIMARY KEY, message_id text NOT NULL,"
                    + " ordering_key text NOT NULL, seq int NOT NULL)");
            }
            boolean transactional = store == Stores.POSTGRES;
            Map<String, String> props = new LinkedHashMap<>();
            store.properties().forEach((k, v) -> props.put(k, String.valueOf(v)));
            props.put("idempotency.outbox.enabled", "false");
            props.putAll(wire.consumerProperties(destination, transactional));
            props.put("ledger.mode", transactional ? "transactional" : "plain");
            props.put("ledger.schema", ledger);
            props.put("ledger.url", TestPostgres.server().url());
            props.put("ledger.user", TestPostgres.server().user());
            props.put("ledger.password", TestPostgres.server().password() == null ? "" : TestPostgres.server().password());

            AtomicBoolean producing = new AtomicBoolean(true);
            List<Throwable> producerFailure = new ArrayList<>();
            Thread producer = new Thread(() -> {
                try (Publisher p = wire.publisher(destination)) {
                    produce(p, producing);
                } catch (Exception e) {
                    producerFailure.add(e);
                }
            }, "exactly-once-producer");
            String logs = wire.name().toLowerCase(java.util.Locale.ROOT) + "-" + store.name().toLowerCase(java.util.Locale.ROOT);
            List<ChildJvm> started = new ArrayList<>();
            ChildJvm a = consumer(props, logs, "a", started);
            producer.start();
            int kills = 0;
            try {
                for (int at : new int[] {1000, 2500, 4000}) {
                    awaitBooked(db, ledger, at);
                    a.kill();
                    kills++;
                    a = consumer(props, logs, "a" + kills, started);
                }
                awaitBooked(db, ledger, 5000);
                ChildJvm b = consumer(props, logs, "b", started); // joins: a rebalance
                awaitBooked(db, ledger, 6500);
                b.stop(Duration.ofSeconds(30)); // leaves: another
                awaitBooked(db, ledger, 7000);
                wire.cut();
                Thread.sleep(3000);
                wire.restore();
                producer.join(120_000);
                assertThat(producerFailure).as("the producer").isEmpty();
                awaitDistinct(db, ledger, DISTINCT, Duration.ofMinutes(3));
                Thread.sleep(2000); // anything still to come twice would come now
            } finally {
                producing.set(false);
                started.forEach(ChildJvm::close);
            }
            long distinct = distinct(db, ledger);
            long rows = count(db, "SELECT count(*) FROM " + ledger + ".ledger");
            System.out.printf("[exactly-once on %s] %s store, %s consumer: %,d deliveries, %,d distinct booked,"
                + " %,d bookings, %d kills%n", wire.name(), store, transactional ? "transactional" : "plain", DELIVERIES,
                distinct, rows, kills);
            assertThat(kills).isEqualTo(KILLS);
            assertThat(distinct).isEqualTo(DISTINCT);
            if (transactional) {
                assertThat(rows).as("a transactional consumer never books twice").isEqualTo(DISTINCT);
            } else {
                // a plain handler's write and its stored outcome are two steps: a kill between them runs it again
                assertThat(rows - distinct).as("booked twice").isLessThanOrEqualTo((long) kills * wire.inFlightPerConsumer());
            }
            if (wire.ordersPerKey()) {
                assertInOrderPerKey(db, ledger);
            }
        } finally {
            TestPostgres.dropSchema(ledger);
        }
    }

    private static ChildJvm consumer(Map<String, String> props, String logs, String name, List<ChildJvm> started)
            throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Map<String, String> p = new HashMap<>(props);
        p.put("micronaut.server.port", String.valueOf(port));
        ChildJvm child = ChildJvm.of(LedgerChild.class.getName(), List.of(), p, port,
            Path.of("target", "exactly-once", logs, name + ".log"));
        started.add(child);
        return child.start();
    }

    /** 10,000 deliveries over 40 keys, each key's in sequence; every sixth a repeat of one sent before. */
    private static void produce(Publisher p, AtomicBoolean producing) throws Exception {
        Random random = new Random(42);
        int[] next = new int[KEYS];
        List<String[]> sent = new ArrayList<>();
        int distinct = 0;
        for (int i = 0; i < DELIVERIES && producing.get(); i++) {
            String[] r;
            if (distinct < DISTINCT && (i % 6 != 5 || sent.isEmpty())) {
                int key = random.nextInt(KEYS);
                int seq = next[key]++;
                r = new String[] {"k" + key, "id-k" + key + "-" + seq, "k" + key + ":" + seq};
                sent.add(r);
                distinct++;
            } else {
                r = sent.get(random.nextInt(sent.size()));
            }
            p.send(r[0], r[1], r[2]);
            if (i % 200 == 199) {
                p.flush();
                Thread.sleep(20); // about 10,000 in 20 s or more: the faults fall inside the run
            }
        }
        p.flush();
    }

    private static void awaitBooked(Connection db, String ledger, long n) throws InterruptedException {
        awaitDistinct(db, ledger, n, Duration.ofMinutes(2));
    }

    /** Checked five times a second: the count reads the whole ledger, and would take a core from the consumers. */
    private static void awaitDistinct(Connection db, String ledger, long n, Duration within) throws InterruptedException {
        Await.until(n + " distinct messages booked", within, Duration.ofMillis(200), () -> distinct(db, ledger) >= n);
    }

    private static long distinct(Connection db, String ledger) {
        return count(db, "SELECT count(DISTINCT message_id) FROM " + ledger + ".ledger");
    }

    private static long count(Connection db, String sql) {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Per key, the first booking of each message follows its sequence: 0, 1, 2, ... */
    private static void assertInOrderPerKey(Connection db, String ledger) throws SQLException {
        Map<String, Integer> last = new HashMap<>();
        Set<String> seen = new HashSet<>();
        try (Statement s = db.createStatement();
             ResultSet rs = s.executeQuery("SELECT message_id, ordering_key, seq FROM " + ledger + ".ledger ORDER BY n")) {
            while (rs.next()) {
                if (!seen.add(rs.getString(1))) {
                    continue;
                }
                Integer before = last.put(rs.getString(2), rs.getInt(3));
                assertThat(rs.getInt(3)).as("%s after %s", rs.getString(1), before)
                    .isEqualTo(before == null ? 0 : before + 1);
            }
        }
    }
}
