package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisServerProcess;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The PostgreSQL failover drill (issue "Stores at scale", item 3): a primary and a streaming
 * standby of the drill's own ({@code initdb}, then {@code pg_basebackup -R} to another port, run
 * as the {@code postgres} user), the filter's PostgreSQL store reaching them through one
 * multi-host JDBC URL with {@code targetServerType=primary}, and the client SDK through the fault
 * proxy as the load. Mid-run the primary's postmaster is killed ({@code kill -9}) and the standby
 * promoted ({@code pg_ctl promote}). Twice: with the standby asynchronous, and synchronous
 * ({@code synchronous_standby_names='*'}, {@code synchronous_commit=on}: a commit returns once the
 * standby has flushed it). It counts handlers run twice, the 503s and the time from the kill to the
 * first 2xx after them. The machine's own PostgreSQL is not touched. A benchmark, not a test.
 *
 * <pre>benchmarks/load/postgres-failover-drill</pre>
 */
public final class PostgresFailoverDrill {

    private static final Path BIN = Path.of(System.getProperty("drill.pg-bin", "/usr/lib/postgresql/15/bin"));
    private static final int WORKERS = 8;

    private PostgresFailoverDrill() {
    }

    public static void main(String[] args) throws Exception {
        StringBuilder report = new StringBuilder("# PostgreSQL failover drill, " + LocalDate.now() + ", "
            + Runtime.getRuntime().availableProcessors() + " CPUs; " + WORKERS + " client-SDK workers through the"
            + " fault proxy; the primary killed (kill -9) after 5 s, the standby promoted at once\n\n"
            + "| standby | operations | failed | handlers run twice | 503s | 503s lasted, ms |"
            + " kill to first 2xx after them, ms |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (boolean synchronous : new boolean[] {false, true}) {
            String row = drill(synchronous);
            System.out.println(row);
            report.append(row).append('\n');
        }
        System.out.println();
        System.out.println(report);
        Path out = Path.of("benchmarks/load/target/postgres-failover-drill.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report.toString(), StandardCharsets.UTF_8);
        System.out.println("written to " + out.toAbsolutePath());
        System.exit(0);
    }

    private static String drill(boolean synchronous) throws Exception {
        DrillController.EXECUTIONS.clear();
        DrillController.ANSWERS.clear();
        Path base = Files.createTempDirectory("idempotency-pg-drill-");
        run("chown", "postgres", base.toString());
        int primaryPort = RedisServerProcess.freePort(false);
        int standbyPort = RedisServerProcess.freePort(false);
        Path primary = base.resolve("primary");
        Path standby = base.resolve("standby");
        try {
            asPostgres(BIN.resolve("initdb").toString(), "-D", primary.toString(), "-A", "trust", "-U", "postgres",
                "--no-sync");
            Files.writeString(primary.resolve("postgresql.conf"), String.join("\n", "",
                "port = " + primaryPort, "listen_addresses = '127.0.0.1'", "unix_socket_directories = '" + base + "'",
                "wal_level = replica", "max_wal_senders = 4", "hot_standby = on",
                "synchronous_standby_names = '" + (synchronous ? "*" : "") + "'", "synchronous_commit = on", ""),
                java.nio.file.StandardOpenOption.APPEND);
            asPostgres(BIN.resolve("pg_ctl").toString(), "-D", primary.toString(), "-l", base.resolve("primary.log").toString(),
                "-w", "start");
            asPostgres(BIN.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(primaryPort),
                "-U", "postgres", "-D", standby.toString(), "-R", "-X", "stream");
            // the standby's configuration is the primary's copy: once promoted it has no standby of its own,
            // and must not wait for one (a synchronous_standby_names it inherited would hold every commit)
            Files.writeString(standby.resolve("postgresql.auto.conf"), "\nport = " + standbyPort
                    + "\nsynchronous_standby_names = ''\n",
                java.nio.file.StandardOpenOption.APPEND);
            asPostgres(BIN.resolve("pg_ctl").toString(), "-D", standby.toString(), "-l", base.resolve("standby.log").toString(),
                "-w", "start");

            Map<String, Object> props = new HashMap<>();
            props.put("drill.enabled", "true");
            props.put("micronaut.server.port", -1);
            props.put("idempotency.store.type", "postgres");
            props.put("idempotency.store-unavailable-retry-after", "1s");
            props.put("datasources.default.url", "jdbc:postgresql://127.0.0.1:" + primaryPort + ",127.0.0.1:" + standbyPort
                + "/postgres?targetServerType=primary&connectTimeout=1");
            props.put("datasources.default.username", "postgres");
            props.put("datasources.default.password", "");
            props.put("datasources.default.driver-class-name", "org.postgresql.Driver");
            props.put("datasources.default.maximum-pool-size", "8");
            props.put("datasources.default.connection-timeout", "1000");
            props.put("datasources.default.initialization-fail-timeout", "-1");
            props.put("datasources.default.dialect", "POSTGRES");
            try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, props);
                 DrillLoad load = new DrillLoad(server.getPort(), WORKERS, (synchronous ? "synchronous" : "asynchronous"))) {
                Thread.sleep(5000);
                long killed = System.nanoTime();
                String pid = Files.readAllLines(primary.resolve("postmaster.pid")).get(0).trim();
                run("kill", "-9", pid);
                asPostgres(BIN.resolve("pg_ctl").toString(), "-D", standby.toString(), "-w", "promote");
                Thread.sleep(8000);
                load.finish();
                long twice = DrillController.EXECUTIONS.values().stream().filter(n -> n.get() > 1).count();
                long first = Long.MAX_VALUE;
                long last = Long.MIN_VALUE;
                int refused = 0;
                List<long[]> answers = new ArrayList<>(DrillController.ANSWERS);
                for (long[] a : answers) {
                    if (a[0] >= killed && a[1] == 503) {
                        refused++;
                        first = Math.min(first, a[0]);
                        last = Math.max(last, a[0]);
                    }
                }
                long after = refused == 0 ? killed : last;
                long firstOk = answers.stream().filter(a -> a[0] > after && a[1] >= 200 && a[1] < 300)
                    .mapToLong(a -> a[0]).min().orElse(Long.MAX_VALUE);
                return "| " + (synchronous ? "synchronous" : "asynchronous") + " | " + load.succeeded() + " | " + load.failed()
                    + " | " + twice + " | " + refused + " | " + (refused == 0 ? 0 : (last - first) / 1_000_000) + " | "
                    + (firstOk == Long.MAX_VALUE ? "none" : Long.toString((firstOk - killed) / 1_000_000)) + " |";
            }
        } finally {
            for (Path dir : List.of(primary, standby)) {
                if (Files.exists(dir.resolve("postmaster.pid"))) {
                    try {
                        asPostgres(BIN.resolve("pg_ctl").toString(), "-D", dir.toString(), "-m", "immediate", "stop");
                    } catch (RuntimeException e) {
                        // a postmaster killed by the drill leaves its pid file behind
                    }
                }
            }
            RedisServerProcess.deleteTree(base);
        }
    }

    private static void asPostgres(String... command) {
        List<String> cmd = new ArrayList<>(List.of("runuser", "-u", "postgres", "--"));
        cmd.addAll(List.of(command));
        run(cmd.toArray(String[]::new));
    }

    private static void run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + output);
            }
        } catch (IOException e) {
            throw new IllegalStateException(String.join(" ", command) + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
