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

    /** Starts {@code masters} cluster-enabled servers on free loopback ports and forms the cluster. */
    public LocalRedisCluster(int masters) {
        try {
            for (int i = 0; i < masters; i++) {
                int port = RedisServerProcess.freePort(true);
                nodes.add(RedisServerProcess.start(RedisServerProcess.binary(), port,
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "5000", "--appendonly", "no"));
            }
            form();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
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
            int per = SLOTS / nodes.size();
            for (int i = 0; i < nodes.size(); i++) {
                int from = i * per;
                int to = i == nodes.size() - 1 ? SLOTS : from + per;
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

    /** @return one URI per node, for {@code RedisClusterClient.create(...)} */
    public List<RedisURI> uris() {
        return nodes.stream().map(n -> RedisURI.create("127.0.0.1", n.port())).toList();
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
