package dev.idempotency.store.postgres;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What one record costs PostgreSQL, counted by PostgreSQL: {@code pg_total_relation_size} of the
 * records table (heap, TOAST and indexes) divided by its rows, as written (each record inserted by
 * its acquire and updated by its completion, so a dead version waits for vacuum) and after
 * {@code VACUUM FULL} (the live rows alone). Bodies are random bytes, which do not compress: the
 * worst case. The figures printed are the ones in
 * {@code benchmarks/README.md}; the bound asserted is a regression guard against the 798 bytes a
 * record with a 75-byte body took before.
 */
class PostgresRecordSizeTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);

    private static StoredResponse response(int bodyBytes) {
        // random bytes: PostgreSQL compresses large values (TOAST), and a repetitive body would
        // measure the compressor, not what an API's varied responses cost
        byte[] body = new byte[bodyBytes];
        new java.util.Random(bodyBytes).nextBytes(body);
        return new StoredResponse(201, Map.of("Content-Type", List.of("application/json"),
            "Location", List.of("/payments/pay_0123456789abcdef")), body, false);
    }

    private static long relationSize(String table) throws Exception {
        try (Connection c = TestPostgres.server().connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_total_relation_size('" + table + "')")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void vacuumFull(String table) throws Exception {
        try (Connection c = TestPostgres.server().connect(); Statement s = c.createStatement()) {
            s.execute("VACUUM FULL " + table);
        }
    }

    @Test
    @DisplayName("S17: bytes per PostgreSQL record by body size; a 75-byte body takes under 798 bytes once vacuumed")
    void bytesPerRecord() throws Exception {
        StringBuilder figures = new StringBuilder("PostgreSQL bytes per record (pg_total_relation_size / rows):");
        for (int size : new int[] {75, 10 * 1024, 1024 * 1024}) {
            String schema = TestPostgres.newSchema();
            String table = schema + ".idempotency_records";
            int records = size >= 1024 * 1024 ? 20 : 1000;
            try (ApplicationContext ctx = ApplicationContext.run(TestPostgres.properties(TestPostgres.server(), schema))) {
                IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
                long empty = relationSize(table);
                for (int i = 0; i < records; i++) {
                    String key = UUID.randomUUID().toString();
                    long token = ((AcquireResult.Acquired) store.acquire(key, new byte[33], LEASE).toCompletableFuture()
                        .join()).fencingToken();
                    assertThat(store.complete(key, token, response(size), RETENTION).toCompletableFuture().join()).isTrue();
                }
                long written = relationSize(table) - empty;
                vacuumFull(table);
                long live = relationSize(table);
                figures.append(String.format(" %d B body: %.0f as written, %.0f vacuumed;", size,
                    written / (double) records, live / (double) records));
                if (size == 75) {
                    assertThat(live / (double) records).isLessThan(798);
                }
            } finally {
                TestPostgres.dropSchema(schema);
            }
        }
        System.out.println(figures);
    }

    @Test
    @DisplayName("O4: what tracing adds to a completed record (75-byte body), counted by PostgreSQL once vacuumed")
    void tracedRecordBytes() throws Exception {
        String trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        double[] live = new double[2];
        for (int traced = 0; traced < 2; traced++) {
            String schema = TestPostgres.newSchema();
            String table = schema + ".idempotency_records";
            try (ApplicationContext ctx = ApplicationContext.run(TestPostgres.properties(TestPostgres.server(), schema))) {
                IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
                for (int i = 0; i < 1000; i++) {
                    String key = UUID.randomUUID().toString();
                    long token = ((AcquireResult.Acquired) store.acquire(key, new byte[33], LEASE,
                        traced == 1 ? trace : null).toCompletableFuture().join()).fencingToken();
                    assertThat(store.complete(key, token, response(75).withTraceparent(traced == 1 ? trace : null),
                        RETENTION).toCompletableFuture().join()).isTrue();
                }
                vacuumFull(table);
                live[traced] = relationSize(table) / 1000.0;
            } finally {
                TestPostgres.dropSchema(schema);
            }
        }
        System.out.printf("PostgreSQL bytes per record with tracing (75 B body, vacuumed): %.0f (untraced %.0f)%n",
            live[1], live[0]);
        // the :trace entry is three text elements, 55 bytes of them the trace context; pages round
        assertThat(live[1] - live[0]).isBetween(40.0, 120.0);
    }
}
