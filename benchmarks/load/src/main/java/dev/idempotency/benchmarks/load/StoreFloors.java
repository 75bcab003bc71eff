package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisWire;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.RedisClient;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the stores can do without the filter, for the report's ceilings: a Redis round trip, the
 * PostgreSQL single-row upsert rate by pgbench, and the records a run leaves behind, deleted.
 */
final class StoreFloors {

    private StoreFloors() {
    }

    private static final Pattern TPS = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)");

    private static final Pattern JDBC = Pattern.compile("jdbc:postgresql://([^:/]+)(?::(\\d+))?/([^?]+).*");

    private static final byte[] PONG = "+PONG\r\n".getBytes(StandardCharsets.US_ASCII);

    /** The median round trip of {@code PING} on one blocking connection, in µs, over {@code count} after 5,000. */

    static double redisRoundTripMicros(URI redis, int count) throws IOException {
        try (Socket socket = RedisWire.open(redis, 2000)) {
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            byte[] ping = "PING\r\n".getBytes(StandardCharsets.US_ASCII);
            byte[] pong = new byte[PONG.length];
            long[] samples = new long[count];
            for (int i = -5_000; i < samples.length; i++) {
                long start = System.nanoTime();
                out.write(ping);
                out.flush();
                int read = 0;
                while (read < pong.length) {
                    int n = in.read(pong, read, pong.length - read);
                    if (n < 0) {
                        throw new IOException("Redis closed the connection");
                    }
                    read += n;
                }
                if (!Arrays.equals(pong, PONG)) { // NOAUTH, say: the reply is not what is being timed
                    throw new IOException("Redis answered PING with " + new String(pong, StandardCharsets.UTF_8).trim()
                        + "...");
                }
                if (i >= 0) {
                    samples[i] = System.nanoTime() - start;
                }
            }
            Arrays.sort(samples);
            return samples[samples.length / 2] / 1000.0;
        }
    }

    static String deleteRecords(String uri, String prefix) {
        RedisClient client = RedisClient.create(uri);
        try {
            return "deleted the run's " + TestRedis.deleteKeys(client, prefix) + " records under " + prefix;
        } catch (RuntimeException e) {
            return "the run's records under " + prefix + " could not be deleted and expire by themselves: " + e;
        } finally {
            client.shutdown();
        }
    }

    /** pgbench's single-row upsert commit rate (16 clients, 2 threads), the PostgreSQL store's own ceiling. */
    static double pgbenchUpsertCommits(TestPostgres.Server pg, String schema, long seconds) throws Exception {
        Matcher url = JDBC.matcher(pg.url());
        if (!url.matches()) {
            throw new IllegalStateException("cannot read host, port and database from " + pg.url());
        }
        try (Connection c = pg.connect(); Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("CREATE TABLE " + schema + ".bench (k bigint PRIMARY KEY, v bigint NOT NULL)");
        }
        Path script = Files.createTempFile("upsert", ".sql");
        Files.writeString(script, "\\set k random(1, 100000000)\nINSERT INTO " + schema + ".bench (k, v) VALUES (:k, 1)"
            + " ON CONFLICT (k) DO UPDATE SET v = bench.v + 1;\n");
        List<String> command = new ArrayList<>(List.of("pgbench", "-n", "-c", "16", "-j", "2", "-T", String.valueOf(seconds),
            "-f", script.toString(), "-h", url.group(1), "-p", url.group(2) == null ? "5432" : url.group(2),
            "-U", pg.user(), url.group(3)));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        if (!pg.password().isEmpty()) {
            pb.environment().put("PGPASSWORD", pg.password());
        }
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            System.err.println("pgbench is not on the PATH: the PostgreSQL ceiling is not measured");
            return Double.NaN;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(seconds + 60L, TimeUnit.SECONDS);
        Matcher tps = TPS.matcher(out);
        if (!tps.find()) {
            throw new IllegalStateException("pgbench failed: " + command + "\n" + out);
        }
        return Double.parseDouble(tps.group(1));
    }
}
