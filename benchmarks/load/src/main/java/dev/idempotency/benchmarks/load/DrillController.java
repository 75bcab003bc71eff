package dev.idempotency.benchmarks.load;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.ResponseFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.filter.ServerFilterPhase;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The failover drill's service ({@code drill.enabled=true} only): one operation per id under the
 * filter, counting its executions, and a filter in front of everything that notes each answer's
 * status and time, so the drill can tell how long the 503s of a failover lasted.
 */
@Controller("/drill")
@ExecuteOn(TaskExecutors.BLOCKING)
@Requires(property = "drill.enabled", value = "true")
class DrillController {

    /** Executions per operation id. */
    static final Map<Long, AtomicInteger> EXECUTIONS = new ConcurrentHashMap<>();
    /** Every answer: its status and when it went out ({@link System#nanoTime()}). */
    static final ConcurrentLinkedQueue<long[]> ANSWERS = new ConcurrentLinkedQueue<>();

    @Post("/{op}")
    @Idempotent
    HttpResponse<Map<String, Object>> run(@PathVariable long op, @Body Map<String, Object> body) {
        int n = EXECUTIONS.computeIfAbsent(op, k -> new AtomicInteger()).incrementAndGet();
        return HttpResponse.created(Map.of("op", op, "execution", n));
    }

    /** Notes each answer's status, outside the idempotency filter (it sees the 503s the filter gives). */
    @ServerFilter("/drill/**")
    @Requires(property = "drill.enabled", value = "true")
    static final class Answers implements Ordered {

        @ResponseFilter
        void note(MutableHttpResponse<?> response) {
            ANSWERS.add(new long[] {System.nanoTime(), response.code()});
        }

        @Override
        public int getOrder() {
            return ServerFilterPhase.FIRST.order();
        }
    }
}
