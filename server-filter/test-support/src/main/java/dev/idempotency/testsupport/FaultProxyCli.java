package dev.idempotency.testsupport;

import java.time.Duration;
import java.util.Locale;

/** {@link FaultProxy} from the command line, for demos. */
public final class FaultProxyCli {

    private FaultProxyCli() {
    }

    private static final String USAGE = "usage: FaultProxy --upstream PORT [--port PORT] [--seed N]"
        + " [--drop P] [--drop-mode close|reset] [--reset P] [--delay MILLIS P] [--response-delay MILLIS P]"
        + " [--refuse P]";

    /**
     * Runs a proxy from the command line, for demos (only the JDK is needed on the class path):
     * {@code java -cp idempotency-test-support.jar dev.idempotency.testsupport.FaultProxyCli
     * --upstream 8080 --port 8081 --seed 42 --drop 0.3}. Prints its counters every 10 s and when
     * stopped. Options are those of {@link FaultProxyBuilder}; probabilities P in [0, 1].
     */
    public static void main(String[] args) throws InterruptedException {
        FaultProxy proxy;
        try {
            proxy = fromArgs(args).build().start();
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            proxy.close();
            System.out.println(proxy.counters());
        }));
        System.out.println(proxy + " listening on " + proxy.baseUrl());
        while (true) {
            Thread.sleep(10_000);
            System.out.println(proxy.counters());
        }
    }

    /** The builder {@link #main} configures (package-private for its test). */
    static FaultProxyBuilder fromArgs(String... args) {
        FaultProxyBuilder b = FaultProxy.builder();
        boolean upstreamSet = false;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--upstream" -> {
                        b.upstream(Integer.parseInt(args[++i]));
                        upstreamSet = true;
                    }
                    case "--port" -> b.port(Integer.parseInt(args[++i]));
                    case "--seed" -> b.seed(Long.parseLong(args[++i]));
                    case "--drop" -> b.dropResponseProbability(Double.parseDouble(args[++i]));
                    case "--drop-mode" -> b.dropMode(FaultProxy.DropMode.valueOf(args[++i].toUpperCase(Locale.ROOT)));
                    case "--reset" -> b.resetProbability(Double.parseDouble(args[++i]));
                    case "--delay" -> b.delay(Duration.ofMillis(Long.parseLong(args[++i])), Double.parseDouble(args[++i]));
                    case "--response-delay" ->
                        b.responseDelay(Duration.ofMillis(Long.parseLong(args[++i])), Double.parseDouble(args[++i]));
                    case "--refuse" -> b.refuseProbability(Double.parseDouble(args[++i]));
                    default -> throw new IllegalArgumentException("unknown option " + args[i] + "\n" + USAGE);
                }
            }
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            throw new IllegalArgumentException("bad arguments: " + e.getMessage() + "\n" + USAGE, e);
        }
        if (!upstreamSet) {
            throw new IllegalArgumentException("--upstream is required\n" + USAGE);
        }
        return b;
    }
}
