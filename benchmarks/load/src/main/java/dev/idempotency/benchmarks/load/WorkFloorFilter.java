package dev.idempotency.benchmarks.load;

import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.filter.FilterContinuation;
import org.reactivestreams.Publisher;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.CompletionStage;

/**
 * A yardstick for the filter's own work: {@link FloorFilter}'s work plus a fixed amount of pure
 * CPU work on the event loop ({@value #MICROS_PROPERTY}, in µs of one thread's CPU time, {@value
 * #DEFAULT_MICROS} by default), before the request goes on. It touches no memory beyond a few
 * registers and hands nothing to another thread, so the route under it ({@code /work-floor/echo})
 * tells what that much work in a filter costs the service's req/s on this machine, the system's
 * own reactions included (a slower service lets the load generator's threads go to sleep, and
 * each response then wakes one). A filter of the same ratio does about as much work per request.
 *
 * <p>The work is a linear congruential recurrence, whose iterations per µs are measured once, on
 * the first use, from this thread's CPU time ({@link #calibrate()}).
 */
@ServerFilter("/work-floor/**")
final class WorkFloorFilter {

    static final String MICROS_PROPERTY = "load.work-floor.micros";
    static final String DEFAULT_MICROS = "6";

    static volatile long sink; // keeps the work from being optimised away

    private final double micros;
    private volatile long iterations = -1;

    WorkFloorFilter(@Value("${" + MICROS_PROPERTY + ":" + DEFAULT_MICROS + "}") double micros) {
        if (micros < 0) {
            throw new IllegalArgumentException(MICROS_PROPERTY + " must be 0 or more, was " + micros);
        }
        this.micros = micros;
    }

    @RequestFilter
    CompletionStage<MutableHttpResponse<?>> filter(HttpRequest<?> request,
                                                   FilterContinuation<Publisher<MutableHttpResponse<?>>> continuation) {
        FloorFilter.copyBody(request);
        long n = iterations;
        if (n < 0) {
            n = Math.round(micros * calibrate());
            iterations = n;
        }
        sink = work(n);
        return FloorFilter.proceed(continuation);
    }

    /**
     * @return the recurrence's iterations per µs of this thread's CPU time: the median of 21
     *     timed runs of about 10 ms each, after as many untimed ones for the compiler
     */
    static double calibrate() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long n = 1 << 22;
        for (int i = 0; i < 21; i++) {
            sink = work(n);
        }
        double[] rates = new double[21];
        for (int i = 0; i < rates.length; i++) {
            long before = threads.getCurrentThreadCpuTime();
            sink = work(n);
            long nanos = Math.max(1, threads.getCurrentThreadCpuTime() - before);
            rates[i] = n * 1000.0 / nanos;
        }
        Arrays.sort(rates);
        return rates[rates.length / 2];
    }

    private static long work(long n) {
        long x = sink;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }
}
