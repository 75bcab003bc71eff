package dev.idempotency.benchmarks.load;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.redis.RedisIdempotencyStore;
import dev.idempotency.testsupport.LocalRedisCluster;
import dev.idempotency.testsupport.LocalRedisSentinels;
import dev.idempotency.testsupport.RedisServerProcess;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * The failover drill (CONTRACT S24): the filter on the Redis store, under a steady load from the
 * client SDK through the fault proxy, while the store's primary is killed ({@code kill -9}) and
 * failed over, five times, with {@code wait-replicas=0} and {@code =1}:
 * <ul>
 *   <li>Sentinel: one primary, one replica and three sentinels, real processes on loopback; each
 *       kill takes the current primary, and the killed one comes back as a replica;</li>
 *   <li>Cluster: three masters with a replica each; each kill takes one master (in turn), whose
 *       replica is promoted;</li>
 *   <li>{@code lagged=<ms>}: one replica behind a delay line, failed over by the drill itself
 *       (its method {@code lagged}), which measures the window {@code wait-replicas} closes.</li>
 * </ul>
 * It counts the operations whose handler ran more than once, the 503s each failover caused and
 * how long they lasted, and the time from each kill to the first 2xx after them. A second part
 * measures what {@code WAIT} costs: new keys at one connection and under 16 connections, with
 * {@code wait-replicas=0} and {@code =1} alternately on one primary with one replica. A benchmark,
 * not a test: it asserts nothing.
 *
 * <pre>benchmarks/load/failover-drill [sentinel,cluster] [kills]</pre> ({@code cost} alone: only the second part)
 */
public final class FailoverDrill {

    private static final int WORKERS = 8;
    private static final long WARM_MS = 3000;
    private static final long BETWEEN_KILLS_MS = 3000;

    private FailoverDrill() {
    }

    /** One failover: when the primary was killed and how long the promotion took. */
    private record Kill(long atNanos, long promotionMillis) {
    }

    public static void main(String[] args) throws Exception {
        List<String> topologies = List.of((args.length > 0 ? args[0] : "sentinel,cluster").split(","));
        int kills = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        StringBuilder report = new StringBuilder();
        report.append("# Failover drill, ").append(LocalDate.now()).append(", ")
            .append(Runtime.getRuntime().availableProcessors()).append(" CPUs; ").append(WORKERS)
            .append(" client-SDK workers through the fault proxy (2% responses dropped, 2% connections reset); ")
            .append(kills).append(" kill -9 of the primary, ").append(BETWEEN_KILLS_MS / 1000)
            .append(" s apart once the killed one is back as a replica\n\n")
            .append("| topology | wait-replicas | operations | failed | handlers run twice | unconfirmed writes kept |"
                + " promotion, ms | 503s per failover | 503s lasted, ms | kill to first 2xx after them, ms |\n"
                + "|---|---:|---:|---:|---:|---:|---|---|---|---|\n");
        for (String topology : topologies) {
            if (topology.equals("cost")) {
                continue;
            }
            for (int wait : new int[] {0, 1}) {
                String row = drill(topology.trim(), wait, kills);
                System.out.println(row);
                report.append(row).append('\n');
            }
        }
        report.append("\n").append(cost());
        System.out.println();
        System.out.println(report);
        Path out = Path.of("benchmarks/load/target/failover-drill.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report.toString(), StandardCharsets.UTF_8);
        System.out.println("written to " + out.toAbsolutePath());
        System.exit(0);
    }

    private static Map<String, Object> service(int wait) {
        Map<String, Object> props = new HashMap<>();
        props.put("drill.enabled", "true");
        props.put("micronaut.server.port", -1);
        props.put("idempotency.store.type", "redis");
        props.put("idempotency.store.redis.wait-replicas", wait);
        // the defaults otherwise (command-timeout 2s, wait-timeout 200ms, store-unavailable-retry-after 2s):
        // the figures the operations guide publishes are what an application gets without tuning
        props.put("idempotency.store.redis.eviction-policy-check", "off");
        return props;
    }

    private static String drill(String topology, int wait, int kills) throws Exception {
        if (topology.startsWith("lagged")) {
            return lagged(topology, wait, kills);
        }
        DrillController.EXECUTIONS.clear();
        DrillController.ANSWERS.clear();
        Map<String, Object> props = service(wait);
        LocalRedisSentinels sentinels = null;
        LocalRedisCluster cluster = null;
        switch (topology) {
            case "sentinel" -> {
                sentinels = new LocalRedisSentinels(1);
                props.put("redis.uri", sentinels.uri());
            }
            case "cluster" -> {
                cluster = new LocalRedisCluster(3, 1, 1000);
                props.put("redis.uris", cluster.uris().stream().map(u -> "redis://127.0.0.1:" + u.getPort())
                    .collect(Collectors.joining(",")));
            }
            default -> throw new IllegalArgumentException("unknown topology " + topology + "; use sentinel or cluster");
        }
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, props);
             DrillLoad load = new DrillLoad(server.getPort(), WORKERS, topology + " wait=" + wait)) {
            Thread.sleep(WARM_MS);
            List<Kill> done = new ArrayList<>();
            int[] slots = {0, 6000, 12000};
            for (int k = 0; k < kills; k++) {
                long at = System.nanoTime();
                long promotion = sentinels != null ? sentinels.failOver() : cluster.failOverMasterOf(slots[k % slots.length]);
                done.add(new Kill(at, promotion));
                Thread.sleep(BETWEEN_KILLS_MS);
            }
            load.finish();
            long twice = DrillController.EXECUTIONS.values().stream().filter(n -> n.get() > 1).count();
            long kept = ((RedisIdempotencyStore) server.getApplicationContext().getBean(IdempotencyStore.class))
                .underReplicatedWrites();
            return "| " + topology + " | " + wait + " | " + load.succeeded() + " | " + load.failed() + " | " + twice + " | "
                + kept + " | " + failovers(done) + " |";
        } finally {
            if (sentinels != null) {
                sentinels.close();
            }
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    /**
     * A primary whose replica lags: the replica replicates through a delay line of
     * {@code lagged=<ms>} (default 20 ms) each way, as across a slow link, and the service reaches
     * the primary through a proxy that stands for a virtual IP. A failover here is the drill's own:
     * the primary killed, the replica promoted ({@code REPLICAOF NO ONE}) at once, the proxy moved
     * to it and its connections reset; then the killed one comes back as the new replica, behind
     * the delay line again. This measures the window {@code wait-replicas} closes: what the
     * primary acknowledged in its last lag before it died.
     */
    private static String lagged(String topology, int wait, int kills) throws Exception {
        DrillController.EXECUTIONS.clear();
        DrillController.ANSWERS.clear();
        long lagMillis = topology.contains("=") ? Long.parseLong(topology.substring(topology.indexOf('=') + 1)) : 20;
        String[] sync = {"--appendonly", "no", "--repl-diskless-sync-delay", "0"};
        RedisServerProcess primary = RedisServerProcess.start(sync);
        dev.idempotency.testsupport.TcpProxy line = new dev.idempotency.testsupport.TcpProxy("127.0.0.1",
            primary.port(), Duration.ofMillis(lagMillis));
        RedisServerProcess replica = RedisServerProcess.start("--appendonly", "no", "--repl-diskless-sync-delay", "0",
            "--replicaof", "127.0.0.1", Integer.toString(line.port()));
        dev.idempotency.testsupport.TcpProxy vip = new dev.idempotency.testsupport.TcpProxy("127.0.0.1", primary.port());
        awaitLinkUp(replica);
        Map<String, Object> props = service(wait);
        props.put("redis.uri", "redis://127.0.0.1:" + vip.port());
        props.put("idempotency.store.redis.wait-timeout", Math.max(200, 4 * lagMillis) + "ms");
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, props);
             DrillLoad load = new DrillLoad(server.getPort(), WORKERS, topology + " wait=" + wait)) {
            Thread.sleep(WARM_MS);
            List<Kill> done = new ArrayList<>();
            for (int k = 0; k < kills; k++) {
                long at = System.nanoTime();
                primary.kill();
                command(replica.port(), "REPLICAOF", "NO", "ONE");
                vip.retarget("127.0.0.1", replica.port());
                vip.stop();
                vip.start();
                done.add(new Kill(at, (System.nanoTime() - at) / 1_000_000));
                RedisServerProcess promoted = replica;
                replica = primary;
                primary = promoted;
                line.retarget("127.0.0.1", primary.port());
                replica.restart("--replicaof", "127.0.0.1", Integer.toString(line.port()));
                awaitLinkUp(replica);
                Thread.sleep(BETWEEN_KILLS_MS);
            }
            load.finish();
            long twice = DrillController.EXECUTIONS.values().stream().filter(n -> n.get() > 1).count();
            long kept = ((RedisIdempotencyStore) server.getApplicationContext().getBean(IdempotencyStore.class))
                .underReplicatedWrites();
            return "| replica " + lagMillis + " ms behind | " + wait + " | " + load.succeeded() + " | " + load.failed()
                + " | " + twice + " | " + kept + " | " + failovers(done) + " |";
        } finally {
            vip.close();
            line.close();
            primary.close();
            replica.close();
        }
    }

    private static void awaitLinkUp(RedisServerProcess replica) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!dev.idempotency.testsupport.RedisWire.info(URI.create(replica.uri()), "replication", 2000)
            .contains("master_link_status:up")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the replica on " + replica.port() + " did not sync within 30 s");
            }
            Thread.sleep(20);
        }
    }

    private static void command(int port, String... args) throws Exception {
        try (java.net.Socket socket = dev.idempotency.testsupport.RedisWire.open(URI.create("redis://127.0.0.1:" + port), 2000)) {
            socket.setSoTimeout(2000);
            socket.getOutputStream().write(dev.idempotency.testsupport.RedisWire.command(args));
            socket.getOutputStream().flush();
            String reply = dev.idempotency.testsupport.RedisWire.line(socket.getInputStream());
            if (!reply.startsWith("+")) {
                throw new IllegalStateException(String.join(" ", args) + " answered " + reply);
            }
        }
    }

    /** @return per failover, separated by '/': promotion, 503 count, 503 span, and kill to the first 2xx after the last 503 */
    private static String failovers(List<Kill> kills) {
        List<long[]> answers = new ArrayList<>(DrillController.ANSWERS);
        List<String> promotion = new ArrayList<>();
        List<String> refused = new ArrayList<>();
        List<String> lasted = new ArrayList<>();
        List<String> recovered = new ArrayList<>();
        for (int i = 0; i < kills.size(); i++) {
            long from = kills.get(i).atNanos();
            long to = i + 1 < kills.size() ? kills.get(i + 1).atNanos() : Long.MAX_VALUE;
            long first = Long.MAX_VALUE;
            long last = Long.MIN_VALUE;
            int count = 0;
            for (long[] a : answers) {
                if (a[0] >= from && a[0] < to && a[1] == 503) {
                    count++;
                    first = Math.min(first, a[0]);
                    last = Math.max(last, a[0]);
                }
            }
            long after = count == 0 ? from : last;
            long firstOk = Long.MAX_VALUE;
            for (long[] a : answers) {
                if (a[0] > after && a[0] < to && a[1] >= 200 && a[1] < 300) {
                    firstOk = Math.min(firstOk, a[0]);
                }
            }
            promotion.add(Long.toString(kills.get(i).promotionMillis()));
            refused.add(Integer.toString(count));
            lasted.add(count == 0 ? "0" : Long.toString((last - first) / 1_000_000));
            recovered.add(firstOk == Long.MAX_VALUE ? "none" : Long.toString((firstOk - from) / 1_000_000));
        }
        return String.join(" / ", promotion) + " | " + String.join(" / ", refused) + " | " + String.join(" / ", lasted)
            + " | " + String.join(" / ", recovered);
    }

    /**
     * What {@code WAIT} costs: new keys straight to the service (no proxy), one connection (2,000
     * in a row) and 16 connections (5 s), with {@code wait-replicas=0} and {@code =1} three times each,
     * alternately, on one primary with one replica.
     */
    private static String cost() throws Exception {
        StringBuilder table = new StringBuilder("## What WAIT costs (one primary, one replica, on loopback)\n\n"
            + "| wait-replicas | round | 1 connection p50, ms | 1 connection p99, ms | 16 connections, req/s |"
            + " 16 connections p50, ms | 16 connections p99, ms |\n|---:|---:|---:|---:|---:|---:|---:|\n");
        try (LocalRedisSentinels redis = new LocalRedisSentinels(1)) {
            for (int round = 1; round <= 3; round++) {
                for (int wait : new int[] {0, 1}) {
                    Map<String, Object> props = service(wait);
                    props.put("redis.uri", redis.uri());
                    try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, props)) {
                        URI target = URI.create("http://127.0.0.1:" + server.getPort() + "/drill/");
                        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
                        sequential(http, target, 500); // warm
                        List<Long> one = sequential(http, target, 2000);
                        List<Long> shared = Collections.synchronizedList(new ArrayList<>());
                        long end = System.nanoTime() + 5_000_000_000L;
                        List<Thread> threads = new ArrayList<>();
                        for (int i = 0; i < 16; i++) {
                            Thread t = new Thread(() -> {
                                java.net.http.HttpClient own = java.net.http.HttpClient.newHttpClient();
                                while (System.nanoTime() < end) {
                                    shared.add(send(own, target));
                                }
                            });
                            t.start();
                            threads.add(t);
                        }
                        for (Thread t : threads) {
                            t.join();
                        }
                        List<Long> many = new ArrayList<>(shared);
                        Collections.sort(one);
                        Collections.sort(many);
                        table.append("| ").append(wait).append(" | ").append(round).append(" | ")
                            .append(ms(percentile(one, 0.5))).append(" | ").append(ms(percentile(one, 0.99))).append(" | ")
                            .append(many.size() / 5).append(" | ").append(ms(percentile(many, 0.5))).append(" | ")
                            .append(ms(percentile(many, 0.99))).append(" |\n");
                    }
                }
            }
        }
        return table.toString();
    }

    private static List<Long> sequential(java.net.http.HttpClient http, URI target, int n) {
        List<Long> latencies = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            latencies.add(send(http, target));
        }
        return latencies;
    }

    private static final AtomicLong COST_IDS = new AtomicLong(1L << 40);

    /** @return the latency of one new key's request, in nanoseconds */
    private static long send(java.net.http.HttpClient http, URI target) {
        HttpRequest request = HttpRequest.newBuilder(target.resolve(Long.toString(COST_IDS.incrementAndGet())))
            .header("Content-Type", "application/json").header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"")
            .POST(HttpRequest.BodyPublishers.ofString("{}")).build();
        long start = System.nanoTime();
        try {
            int status = http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
            if (status != 201) {
                System.out.println("cost: answered " + status);
            }
        } catch (Exception e) {
            System.out.println("cost: " + e);
        }
        return System.nanoTime() - start;
    }

    private static long percentile(List<Long> sorted, double p) {
        return sorted.isEmpty() ? 0 : sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }

    private static String ms(long nanos) {
        return String.format("%.2f", nanos / 1e6);
    }
}
