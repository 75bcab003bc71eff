package dev.idempotency.testsupport;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * A real Redis Cluster of {@code masters} nodes on 127.0.0.1, started by the tests: one
 * {@code redis-server --cluster-enabled yes} per node on a free port (whose cluster-bus port,
 * port + 10000, is free too), joined with {@code CLUSTER MEET}, the 16384 slots split evenly with
 * {@code CLUSTER ADDSLOTS} (works on Redis 6.2, unlike ADDSLOTSRANGE), then polled until every
 * node reports {@code cluster_state:ok} and knows every other node. No redis-cli involved.
 * {@link #close()} stops the processes and deletes their directories (nodes.conf included).
 */
public final class LocalRedisCluster implements AutoCloseable {

    public static final int SLOTS = 16384;

    private final List<RedisServerProcess> nodes = new ArrayList<>();
    private final int masters;

    /** Starts {@code masters} cluster-enabled servers on free loopback ports and forms the cluster. */
    public LocalRedisCluster(int masters) {
        this(masters, 0, 5000);
    }

    /**
     * Starts {@code masters} masters and {@code replicasPerMaster} replicas of each
     * ({@code CLUSTER REPLICATE}), with {@code --cluster-node-timeout nodeTimeoutMillis}: a master
     * that stops answering for that long is failed over to its replica.
     */
    public LocalRedisCluster(int masters, int replicasPerMaster, long nodeTimeoutMillis) {
        this.masters = masters;
        try {
            for (int i = 0; i < masters * (1 + replicasPerMaster); i++) {
                int port = RedisServerProcess.freePort(true);
                nodes.add(RedisServerProcess.start(RedisServerProcess.binary(), port,
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", Long.toString(nodeTimeoutMillis), "--appendonly", "no",
                    "--repl-diskless-sync-delay", "0"));
            }
            form();
            if (replicasPerMaster > 0) {
                replicate();
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Makes every node after the masters a replica of master {@code (i - masters) % masters}, and waits until all are in sync. */
    private void replicate() {
        RedisClient client = RedisClient.create();
        try {
            for (int i = masters; i < nodes.size(); i++) {
                String masterId = nodeId(client, nodes.get((i - masters) % masters).port());
                try (StatefulRedisConnection<String, String> c = client.connect(RedisURI.create("127.0.0.1",
                    nodes.get(i).port()))) {
                    c.sync().clusterReplicate(masterId);
                }
            }
            awaitHealthy(30_000);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private static String nodeId(RedisClient client, int port) {
        try (StatefulRedisConnection<String, String> c = client.connect(RedisURI.create("127.0.0.1", port))) {
            return c.sync().clusterMyId();
        }
    }

    /**
     * Waits until every running node reports {@code cluster_state:ok}, every master with slots
     * has as many replicas in sync as it should, and no node is flagged failing.
     */
    private void awaitHealthy(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        int replicasPerMaster = nodes.size() / masters - 1;
        String last = "";
        while (System.nanoTime() < deadline) {
            boolean ok = true;
            for (RedisServerProcess n : nodes) {
                try {
                    String state = RedisWire.info(java.net.URI.create(n.uri()), "replication", 2000);
                    String cluster = clusterCommand(n.port(), "INFO");
                    String view = clusterCommand(n.port(), "NODES");
                    ok &= cluster.contains("cluster_state:ok") && !view.contains("fail");
                    if (state.contains("role:master") && view.lines().anyMatch(l -> l.contains("myself,master")
                        && l.split(" ").length > 8)) {
                        ok &= state.lines().filter(l -> l.startsWith("slave") && l.contains("state=online"))
                            .count() >= replicasPerMaster;
                    }
                    last = view;
                } catch (java.io.IOException e) {
                    ok = false;
                    last = e.toString();
                }
            }
            if (ok) {
                return;
            }
            RedisServerProcess.sleep(50);
        }
        throw new IllegalStateException("the cluster did not become healthy with its replicas in sync: " + last);
    }

    private static String clusterCommand(int port, String what) throws java.io.IOException {
        try (java.net.Socket s = RedisWire.open(java.net.URI.create("redis://127.0.0.1:" + port), 2000)) {
            s.setSoTimeout(2000);
            s.getOutputStream().write(RedisWire.command("CLUSTER", what));
            s.getOutputStream().flush();
            String header = RedisWire.line(s.getInputStream());
            if (!header.startsWith("$")) {
                throw new java.io.IOException("CLUSTER " + what + " answered " + header);
            }
            byte[] body = s.getInputStream().readNBytes(Integer.parseInt(header.substring(1)) + 2);
            return new String(body, 0, body.length - 2, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /**
     * Kills ({@code kill -9}) the master that serves {@code slot}, waits until its replica has been
     * promoted and the cluster is ok again, then starts the killed node again (its nodes.conf
     * kept), which rejoins as a replica of the new master.
     *
     * @return how long the promotion took, in milliseconds from the kill
     */
    public long failOverMasterOf(int slot) {
        RedisServerProcess master = masterOf(slot);
        long start = System.nanoTime();
        master.kill();
        long deadline = start + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            RedisServerProcess now = null;
            try {
                now = masterOf(slot);
            } catch (RuntimeException notYet) {
                // no live node claims the slot yet
            }
            if (now != null && now != master) {
                break;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no replica took over slot " + slot + " within 30 s");
            }
            RedisServerProcess.sleep(20);
        }
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        master.restart();
        awaitHealthy(30_000);
        return took;
    }

    /** @return the running node that says of itself that it is the master serving {@code slot} */
    public RedisServerProcess masterOf(int slot) {
        for (RedisServerProcess n : nodes) {
            if (!n.isRunning()) {
                continue;
            }
            try {
                for (String line : clusterCommand(n.port(), "NODES").lines().toList()) {
                    String[] f = line.split(" ");
                    if (f.length > 8 && f[2].contains("myself") && f[2].contains("master") && serves(f, slot)) {
                        return n;
                    }
                }
            } catch (java.io.IOException e) {
                // a node that does not answer serves nothing
            }
        }
        throw new IllegalStateException("no running node serves slot " + slot);
    }

    private static boolean serves(String[] nodeLine, int slot) {
        for (int i = 8; i < nodeLine.length; i++) {
            String range = nodeLine[i];
            if (range.startsWith("[")) {
                continue; // a slot being migrated
            }
            int dash = range.indexOf('-');
            int from = Integer.parseInt(dash < 0 ? range : range.substring(0, dash));
            int to = dash < 0 ? from : Integer.parseInt(range.substring(dash + 1));
            if (slot >= from && slot <= to) {
                return true;
            }
        }
        return false;
    }

    private void form() {
        RedisClient client = RedisClient.create();
        try {
            List<StatefulRedisConnection<String, String>> conns = new ArrayList<>();
            for (RedisServerProcess n : nodes) {
                conns.add(client.connect(RedisURI.create("127.0.0.1", n.port())));
            }
            RedisCommands<String, String> first = conns.get(0).sync();
            for (int i = 1; i < nodes.size(); i++) {
                first.clusterMeet("127.0.0.1", nodes.get(i).port());
            }
            int per = SLOTS / masters;
            for (int i = 0; i < masters; i++) {
                int from = i * per;
                int to = i == masters - 1 ? SLOTS : from + per;
                conns.get(i).sync().clusterAddSlots(IntStream.range(from, to).toArray());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                boolean ok = true;
                for (StatefulRedisConnection<String, String> c : conns) {
                    String info = c.sync().clusterInfo();
                    long known = c.sync().clusterNodes().lines().filter(l -> !l.isBlank()).count();
                    ok &= info.contains("cluster_state:ok") && known == nodes.size();
                }
                if (ok) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("cluster did not reach cluster_state:ok: "
                        + conns.get(0).sync().clusterInfo());
                }
                RedisServerProcess.sleep(100);
            }
            conns.forEach(StatefulRedisConnection::close);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** @return one URI per master the cluster was formed with, for {@code RedisClusterClient.create(...)} */
    public List<RedisURI> uris() {
        return nodes.stream().limit(masters).map(n -> RedisURI.create("127.0.0.1", n.port())).toList();
    }

    public List<RedisServerProcess> nodes() {
        return nodes;
    }

    @Override
    public void close() {
        for (RedisServerProcess n : nodes) {
            n.close();
        }
    }
}
