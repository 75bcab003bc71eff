package dev.idempotency.benchmarks.load;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs wrk against the service and reads its report. */
final class Wrk {

    static final String BODY = "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\",\"description\":\"Order 1001\"}";

    private static final Pattern RPS = Pattern.compile("Requests/sec:\\s+([0-9.]+)");
    private static final Pattern PERCENTILE = Pattern.compile("^\\s+(50|99)(?:\\.000)?%\\s+([0-9.]+)(us|ms|s)\\s*$",
        Pattern.MULTILINE);
    private static final Pattern NON_2XX = Pattern.compile("Non-2xx or 3xx responses:\\s+(\\d+)");
    private static final Pattern SOCKET_ERRORS = Pattern.compile("Socket errors: connect (\\d+), read (\\d+), write (\\d+), timeout (\\d+)");
    private static final Pattern TOTAL = Pattern.compile("(\\d+) requests in");

    /** What one run measured. */
    record Result(double requestsPerSecond, double p50Micros, double p99Micros, long requests, long failures) {
    }

    private final Path scripts;

    Wrk(Path scripts) {
        this.scripts = scripts;
    }

    /**
     * Prints the wrk script of the new-key configurations (its key prefix is wrk's first argument
     * after {@code --}), for a benchmark run by hand: {@code benchmarks/load/pinned-cores.sh}, {@code benchmarks/load/tail/saturated-tail.sh}.
     */
    public static void main(String[] args) {
        System.out.print(Scripts.NEW_KEYS.formatted(BODY));
    }

    /** @return whether wrk is on the PATH */
    static boolean available() {
        try {
            Process p = new ProcessBuilder("wrk", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            p.waitFor(10, TimeUnit.SECONDS);
            return true;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * What is sent where. Each configuration under the filter has a baseline that sends the very
     * same requests (the same script, the same {@code Idempotency-Key} headers) to the route
     * without the filter: a script that makes a new key per request costs wrk itself more CPU,
     * which on a small machine would otherwise be charged to the filter.
     */
    enum Kind {
        BASELINE_NEW("/echo", Scripts.NEW_KEYS),
        NEW_KEYS("/idem/echo", Scripts.NEW_KEYS),
        /** The same requests under {@link FloorFilter}: the least any body-reading filter costs. */
        FLOOR("/floor/echo", Scripts.NEW_KEYS),
        /**
         * The same requests under {@link StoreFloorFilter}: the floor plus the store's two round
         * trips (measured for Redis, whose latency target is stated in round trips).
         */
        STORE_FLOOR("/store-floor/echo", Scripts.NEW_KEYS),
        /**
         * The same requests under {@link WorkFloorFilter}: the floor plus a fixed amount of CPU work
         * on the event loop, a yardstick for what the filter's own work costs the ratio (measured
         * in-memory, where the filter's cost is all its own work).
         */
        WORK_FLOOR("/work-floor/echo", Scripts.NEW_KEYS),
        BASELINE_REPLAY("/echo", Scripts.ONE_KEY),
        REPLAYS("/idem/echo", Scripts.ONE_KEY),
        /** {@link #BASELINE_NEW} on a path Micronaut's OpenTelemetry traces (the others are excluded): {@link TracingLatency}. */
        TRACED_BASELINE_NEW("/traced/echo", Scripts.NEW_KEYS),
        /** {@link #NEW_KEYS} on a traced path: the filter with tracing on. */
        TRACED_NEW_KEYS("/traced/idem/echo", Scripts.NEW_KEYS);

        final String path;
        final String script;

        Kind(String path, String script) {
            this.path = path;
            this.script = script;
        }

        /** @return the configuration whose requests are the same, without the filter */
        Kind baseline() {
            return switch (this) {
                case BASELINE_NEW, NEW_KEYS, FLOOR, STORE_FLOOR, WORK_FLOOR -> BASELINE_NEW;
                case BASELINE_REPLAY, REPLAYS -> BASELINE_REPLAY;
                case TRACED_BASELINE_NEW, TRACED_NEW_KEYS -> TRACED_BASELINE_NEW;
            };
        }

        boolean isBaseline() {
            return baseline() == this;
        }
    }

    private static final class Scripts {
        /** A new key per request: {@code "<prefix>-<thread>-<n>"}. */
        static final String NEW_KEYS = """
            wrk.method = "POST"
            wrk.body = '%s'
            wrk.headers["Content-Type"] = "application/json"
            local thread_count = 0
            function setup(thread)
              thread_count = thread_count + 1
              thread:set("tid", thread_count)
            end
            local prefix
            local counter = 0
            function init(args)
              prefix = args[1] .. "-" .. tostring(tid)
            end
            function request()
              counter = counter + 1
              wrk.headers["Idempotency-Key"] = '"' .. prefix .. "-" .. counter .. '"'
              return wrk.format()
            end
            """;
        /** One key for every request. */
        static final String ONE_KEY = """
            wrk.method = "POST"
            wrk.body = '%s'
            wrk.headers["Content-Type"] = "application/json"
            function init(args)
              wrk.headers["Idempotency-Key"] = '"' .. args[1] .. '"'
            end
            """;
    }

    /**
     * @param base        e.g. {@code http://127.0.0.1:8080}
     * @param key         the key (replays) or the key prefix (new keys)
     * @return what wrk reported
     */
    Result run(String base, Kind kind, String key, int threads, int connections, int seconds) throws Exception {
        Path script = scripts.resolve((kind.script == Scripts.NEW_KEYS ? "new-keys" : "one-key") + ".lua");
        if (!Files.exists(script)) {
            Files.writeString(script, kind.script.formatted(BODY), StandardCharsets.UTF_8);
        }
        List<String> command = new ArrayList<>(List.of("wrk", "-t" + threads, "-c" + connections, "-d" + seconds + "s",
            "--latency", "-s", script.toString(), base + kind.path, "--", key));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(seconds + 60L, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("wrk failed: " + command + "\n" + out);
        }
        return parse(out);
    }

    static Result parse(String out) {
        Matcher rps = RPS.matcher(out);
        if (!rps.find()) {
            throw new IllegalStateException("no Requests/sec in wrk's report:\n" + out);
        }
        double p50 = Double.NaN;
        double p99 = Double.NaN;
        Matcher m = PERCENTILE.matcher(out);
        while (m.find()) {
            double micros = Double.parseDouble(m.group(2)) * switch (m.group(3)) {
                case "us" -> 1;
                case "ms" -> 1_000;
                default -> 1_000_000;
            };
            if (m.group(1).equals("50")) {
                p50 = micros;
            } else {
                p99 = micros;
            }
        }
        long failures = 0;
        Matcher non2xx = NON_2XX.matcher(out);
        if (non2xx.find()) {
            failures += Long.parseLong(non2xx.group(1));
        }
        Matcher socket = SOCKET_ERRORS.matcher(out);
        if (socket.find()) {
            for (int g = 1; g <= 4; g++) {
                failures += Long.parseLong(socket.group(g));
            }
        }
        Matcher total = TOTAL.matcher(out);
        long requests = total.find() ? Long.parseLong(total.group(1)) : 0;
        return new Result(Double.parseDouble(rps.group(1)), p50, p99, requests, failures);
    }
}
