package dev.idempotency.store.redis;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A controller under {@link Idempotent} for the filter-level tests, present only in contexts
 * with {@code spec.name=RedisFilterTests}. Executions are counted per {@code test.id} across all
 * application instances of the JVM, so a test with two instances sees the total.
 */
@Controller("/redis-api")
@ExecuteOn(TaskExecutors.BLOCKING)
@Requires(property = "spec.name", value = TestApi.SPEC)
class TestApi {

    static final String SPEC = "RedisFilterTests";
    static final Map<String, AtomicInteger> EXECUTIONS = new ConcurrentHashMap<>();

    static int executions(String test) {
        return EXECUTIONS.computeIfAbsent(test, t -> new AtomicInteger()).get();
    }

    @Post("/{test}")
    @Idempotent
    Map<String, Object> run(String test, @Body Map<String, Object> body) throws InterruptedException {
        int n = EXECUTIONS.computeIfAbsent(test, t -> new AtomicInteger()).incrementAndGet();
        Object delay = body.get("delayMillis");
        if (delay instanceof Number d) {
            Thread.sleep(d.longValue());
        }
        return Map.of("test", test, "execution", n, "nonce", java.util.UUID.randomUUID().toString());
    }
}
