package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.RedisServerProcess;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * S17: at startup the Redis store reads {@code maxmemory-policy} and says so when Redis may
 * evict its keys, on Redis servers of this test's own (the shared one is not reconfigured).
 */
class EvictionPolicyCheckTest {

    static RedisServerProcess lru;
    static RedisServerProcess safe;

    @BeforeAll
    static void start() {
        lru = RedisServerProcess.start("--maxmemory-policy", "allkeys-lru");
        safe = RedisServerProcess.start("--maxmemory-policy", "noeviction");
    }

    @AfterAll
    static void stop() {
        lru.close();
        safe.close();
    }

    private static List<String> warningsWhileStarting(String uri, Map<String, Object> extra) {
        try (LogCapture log = LogCapture.of(RedisIdempotencyStore.class, Level.WARN).start()) {
            Map<String, Object> p = new java.util.HashMap<>(extra);
            p.put("redis.uri", uri);
            try (ApplicationContext ctx = ApplicationContext.run(p)) {
                assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            }
            return log.lines(Level.WARN);
        }
    }

    @Test
    @DisplayName("S17: allkeys-lru is a WARN at startup that names the policy and noeviction")
    void warnsOnEvictingPolicy() {
        assertThat(warningsWhileStarting(lru.uri(), Map.of())).singleElement().asString()
            .contains("maxmemory-policy is allkeys-lru").contains("Set maxmemory-policy noeviction");
    }

    @Test
    @DisplayName("S17: noeviction starts quietly")
    void quietOnNoeviction() {
        assertThat(warningsWhileStarting(safe.uri(), Map.of())).isEmpty();
    }

    @Test
    @DisplayName("S17: eviction-policy-check=fail stops the startup on an evicting policy")
    void failStopsStartup() {
        assertThatThrownBy(() -> ApplicationContext.run(Map.of("redis.uri", lru.uri(),
            "idempotency.store.redis.eviction-policy-check", "fail")))
            .hasStackTraceContaining("maxmemory-policy is allkeys-lru")
            .hasStackTraceContaining("eviction-policy-check=fail");
    }

    @Test
    @DisplayName("S17: volatile policies are unsafe too (every record has a TTL); noeviction is the one safe policy")
    void whichPoliciesAreSafe() {
        assertThat(RedisEvictionPolicyCheck.problem("noeviction")).isNull();
        for (String p : List.of("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu",
            "volatile-random", "volatile-ttl")) {
            assertThat(RedisEvictionPolicyCheck.problem(p)).as(p).contains("maxmemory-policy is " + p);
        }
    }

    @Test
    @DisplayName("S17: a Redis that is down at startup is a WARN that it could not check, not a failed start")
    void unreachableAtStartup() {
        int closed = RedisServerProcess.freePort(false);
        assertThat(warningsWhileStarting("redis://127.0.0.1:" + closed,
            Map.of("idempotency.store.redis.command-timeout", "300ms"))).singleElement().asString()
            .contains("could not read Redis's maxmemory-policy");
    }
}
