package dev.idempotency.store.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Checks once at startup that the Redis the store was given can keep its promises, and says
 * what to change when it cannot (a WARN each; the application starts either way, since a
 * sentinel or a replica may come later):
 * <ul>
 *   <li>a {@code redis-sentinel://} URI whose master name no sentinel monitors: the store would
 *       never find a primary, and every request with a key would be answered 503;</li>
 *   <li>{@code wait-replicas} higher than the replicas the primary reports (for a cluster: than
 *       the replicas of its least-replicated master): every acquire would fail closed with 503.</li>
 * </ul>
 * A Redis or sentinel that cannot be reached at startup is logged once and not counted as either.
 */
@Singleton
@Requires(beans = RedisIdempotencyStore.class)
final class RedisTopologyCheck {

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private final RedisIdempotencyStore store;
    private final RedisIdempotencyStoreConfiguration config;

    RedisTopologyCheck(RedisIdempotencyStore store, RedisIdempotencyStoreConfiguration config) {
        this.store = store;
        this.config = config;
    }

    @EventListener
    void check(StartupEvent event) {
        for (String problem : problems()) {
            LOG.warn(problem);
        }
    }

    /** @return what is wrong with the topology, each in a sentence with what to do; empty when nothing is */
    List<String> problems() {
        List<String> problems = new ArrayList<>();
        long wait = config.getCommandTimeout().toMillis() + 1000;
        RedisURI uri = store.uris().get(0);
        if (!uri.getSentinels().isEmpty() && store.applicationClient() instanceof RedisClient client) {
            String problem = sentinelsKnow(client, uri, wait);
            if (problem != null) {
                problems.add(problem);
                return problems; // without a primary there are no replicas to count
            }
        }
        int required = config.getWaitReplicas();
        if (required > 0) {
            try {
                int replicas = store.fewestReplicas().get(wait, TimeUnit.MILLISECONDS);
                if (replicas < required) {
                    problems.add("idempotency: " + RedisIdempotencyStoreConfigurationProperties.PREFIX + ".wait-replicas="
                        + required + ", but the primary reports " + replicas + " connected replica(s): every acquire"
                        + " fails closed (503 idempotency-store-unavailable) until " + required + " replica(s) confirm"
                        + " its writes. Add replicas, or lower wait-replicas to at most " + replicas);
                }
            } catch (ExecutionException | TimeoutException e) {
                LOG.warn("idempotency: could not count Redis's replicas for wait-replicas={} ({})", required,
                    e instanceof ExecutionException ? String.valueOf(e.getCause()) : "no answer in time");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return problems;
    }

    /** @return a problem when no sentinel of {@code uri} that answers knows its master, else {@code null} */
    private static String sentinelsKnow(RedisClient client, RedisURI uri, long waitMillis) {
        String master = uri.getSentinelMasterId();
        List<String> asked = new ArrayList<>();
        List<String> unreachable = new ArrayList<>();
        for (RedisURI sentinel : uri.getSentinels()) {
            String where = sentinel.getHost() + ":" + sentinel.getPort();
            try (StatefulRedisSentinelConnection<String, String> c = client.connectSentinelAsync(StringCodec.UTF8, sentinel)
                .get(waitMillis, TimeUnit.MILLISECONDS)) {
                SocketAddress address = c.async().getMasterAddrByName(master).get(waitMillis, TimeUnit.MILLISECONDS);
                if (address != null) {
                    return null;
                }
                asked.add(where);
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                unreachable.add(where);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        if (asked.isEmpty()) {
            LOG.warn("idempotency: no sentinel of the Redis store answered at startup ({}); the store asks them again"
                + " on every connect", String.join(", ", unreachable));
            return null;
        }
        return "idempotency: no sentinel knows a primary named '" + master + "' (asked " + String.join(", ", asked)
            + (unreachable.isEmpty() ? "" : "; no answer from " + String.join(", ", unreachable)) + "), so the Redis"
            + " store finds no primary and every request with an Idempotency-Key is answered 503. Make the name after"
            + " '#' in the redis-sentinel:// URI the one of the sentinels' 'sentinel monitor' line";
    }
}
