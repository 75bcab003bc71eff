package dev.idempotency.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A replicated Redis under Sentinel, as real processes on 127.0.0.1 and free ports: one primary,
 * {@code replicas} replicas ({@code --replicaof}) and three sentinels with a quorum of two. A
 * primary is counted down after {@link #DOWN_AFTER_MILLIS} without an answer, so a failover takes
 * about three seconds (at one second, on a 2-core machine, the sentinels sometimes counted the
 * primary they had just promoted down too, and failed it back over at once). {@link #failOver()} kills the current primary ({@code kill -9}), waits until
 * the sentinels have promoted a replica, and starts the killed process again as a replica of the
 * new primary, as a supervisor restarting it would. {@link #close()} stops every process and
 * deletes their directories.
 */
public final class LocalRedisSentinels implements AutoCloseable {

    public static final String MASTER = "idempotency";
    public static final long DOWN_AFTER_MILLIS = 2000;

    private final List<RedisServerProcess> servers = new ArrayList<>();
    private final List<RedisServerProcess> sentinels = new ArrayList<>();

    public LocalRedisSentinels(int replicas) {
        try {
            // a replica that (re)connects is synced at once, not after Redis 7's default 5 s wait for others
            RedisServerProcess primary = RedisServerProcess.start("--appendonly", "no", "--repl-diskless-sync-delay", "0");
            servers.add(primary);
            for (int i = 0; i < replicas; i++) {
                servers.add(RedisServerProcess.start("--appendonly", "no", "--repl-diskless-sync-delay", "0",
                    "--replicaof", "127.0.0.1", Integer.toString(primary.port())));
            }
            for (int i = 0; i < 3; i++) {
                sentinels.add(RedisServerProcess.sentinel(MASTER, primary.port(), 2, DOWN_AFTER_MILLIS));
            }
            awaitReplicas(primary.port(), replicas, 20_000);
            awaitSentinelsAgree(primary.port(), replicas, 20_000);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** @return {@code redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3#idempotency} */
    public String uri() {
        return "redis-sentinel://" + sentinels.stream().map(s -> "127.0.0.1:" + s.port())
            .collect(Collectors.joining(",")) + "#" + MASTER;
    }

    /** @return a sentinel URI for a master name no sentinel monitors */
    public String uri(String master) {
        return uri().replace("#" + MASTER, "#" + master);
    }

    public List<RedisServerProcess> servers() {
        return List.copyOf(servers);
    }

    /** @return the port of the server that every sentinel names as the primary now */
    public int primaryPort() {
        Integer agreed = null;
        for (RedisServerProcess s : sentinels) {
            int port = masterPort(s);
            if (agreed != null && agreed != port) {
                throw new IllegalStateException("the sentinels disagree on the primary: " + agreed + " and " + port);
            }
            agreed = port;
        }
        return agreed;
    }

    /** @return the server process that is the primary now */
    public RedisServerProcess primary() {
        int port = primaryPort();
        return servers.stream().filter(s -> s.port() == port).findFirst()
            .orElseThrow(() -> new IllegalStateException("no server of this topology on port " + port));
    }

    /**
     * Kills the primary ({@code kill -9}), waits until the sentinels name a new one and it is a
     * primary, then starts the killed server again as its replica.
     *
     * @return how long the sentinels took to promote the new primary, in milliseconds
     */
    public long failOver() {
        RedisServerProcess old = primary();
        long start = System.nanoTime();
        old.kill();
        long deadline = start + TimeUnit.SECONDS.toNanos(30);
        int now;
        while (true) {
            now = quietPrimaryPort();
            if (now > 0 && now != old.port() && "master".equals(role(now))) {
                break;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no failover within 30 s after killing the primary on " + old.port()
                    + logs());
            }
            RedisServerProcess.sleep(20);
        }
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        old.restart("--replicaof", "127.0.0.1", Integer.toString(now));
        awaitReplicas(now, servers.size() - 1, 30_000);
        awaitSentinelsAgree(now, servers.size() - 1, 30_000);
        return took;
    }

    /** @return the primary all sentinels agree on, or -1 while they do not */
    private int quietPrimaryPort() {
        try {
            return primaryPort();
        } catch (RuntimeException disagree) {
            return -1;
        }
    }

    private void awaitReplicas(int primaryPort, int replicas, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (true) {
            String info = info(primaryPort, "replication");
            long online = info.lines().filter(l -> l.startsWith("slave") && l.contains("state=online")).count();
            if (online >= replicas) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the primary on " + primaryPort + " has " + online + " of " + replicas
                    + " replicas online: " + info + logs());
            }
            RedisServerProcess.sleep(50);
        }
    }

    private void awaitSentinelsAgree(int primaryPort, int replicas, long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (true) {
            boolean agree = true;
            for (RedisServerProcess s : sentinels) {
                String master = info(s.port(), "sentinel");
                agree &= masterPort(s) == primaryPort && master.contains("slaves=" + replicas)
                    && master.contains("sentinels=" + sentinels.size());
            }
            if (agree) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the sentinels did not agree on the primary " + primaryPort
                    + " with " + replicas + " replicas: " + info(sentinels.get(0).port(), "sentinel") + logs());
            }
            RedisServerProcess.sleep(50);
        }
    }

    private static int masterPort(RedisServerProcess sentinel) {
        try (var s = RedisWire.open(URI.create("redis://127.0.0.1:" + sentinel.port()), 2000)) {
            s.setSoTimeout(2000);
            s.getOutputStream().write(RedisWire.command("SENTINEL", "get-master-addr-by-name", MASTER));
            s.getOutputStream().flush();
            List<String> reply = RedisWire.array(s.getInputStream());
            return Integer.parseInt(reply.get(1));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return the {@code ROLE} of the server on {@code port}: master, slave, or "down" */
    public static String role(int port) {
        try {
            return info(port, "replication").lines().filter(l -> l.startsWith("role:"))
                .map(l -> l.substring(5).trim()).findFirst().orElse("unknown");
        } catch (RuntimeException e) {
            return "down";
        }
    }

    private static String info(int port, String section) {
        try {
            return RedisWire.info(URI.create("redis://127.0.0.1:" + port), section, 2000);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return every process's log, for a failure's message */
    public String logs() {
        StringBuilder all = new StringBuilder();
        for (RedisServerProcess p : sentinels) {
            all.append("\n--- sentinel ").append(p.port()).append(" ---\n").append(p.log());
        }
        for (RedisServerProcess p : servers) {
            all.append("\n--- server ").append(p.port()).append(" ---\n").append(p.log());
        }
        return all.toString();
    }

    @Override
    public void close() {
        sentinels.forEach(RedisServerProcess::close);
        servers.forEach(RedisServerProcess::close);
    }
}
