package dev.idempotency.benchmarks.load;

import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The service under load, in a process of its own: {@code key=value} arguments become Micronaut
 * properties (the harness passes the store's); it prints {@code READY <port>} once it listens and
 * runs until its standard input closes. A line {@code allocated} on its standard input is answered
 * with {@code ALLOCATED <bytes>}: the heap this JVM's threads have allocated so far, which the
 * harness reads before and after each run for the allocation per request.
 */
public final class LoadApp {

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private LoadApp() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> properties = new HashMap<>();
        properties.put("micronaut.server.port", -1);
        properties.put("micronaut.application.name", "idempotency-load");
        // Micronaut's OpenTelemetry traces the routes under /traced/ only (TracingLatency); spans are
        // recorded and dropped, not exported: the export runs off the request's thread anyway
        properties.put("otel.exclusions[0]", "^(?!/traced/).*");
        properties.put("otel.traces.exporter", "none");
        properties.put("otel.metrics.exporter", "none");
        properties.put("otel.logs.exporter", "none");
        for (String arg : args) {
            int eq = arg.indexOf('=');
            properties.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, properties)) {
            System.out.println("READY " + server.getPort());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) { // until the harness closes our standard input (or dies)
                if (line.equals("allocated")) {
                    System.out.println("ALLOCATED " + THREADS.getTotalThreadAllocatedBytes());
                    System.out.flush();
                }
            }
        }
        System.exit(0);
    }
}
