package dev.idempotency.benchmarks.load;

import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.util.HashMap;
import java.util.Map;

/**
 * The service under load, in a process of its own: {@code key=value} arguments become Micronaut
 * properties (the harness passes the store's); it prints {@code READY <port>} once it listens and
 * runs until its standard input closes.
 */
public final class LoadApp {

    private LoadApp() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> properties = new HashMap<>();
        properties.put("micronaut.server.port", -1);
        properties.put("micronaut.application.name", "idempotency-load");
        for (String arg : args) {
            int eq = arg.indexOf('=');
            properties.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, properties)) {
            System.out.println("READY " + server.getPort());
            System.out.flush();
            while (System.in.read() >= 0) {
                // run until the harness closes our standard input (or dies)
            }
        }
        System.exit(0);
    }
}
