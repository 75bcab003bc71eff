package dev.idempotency.examples.client;

import io.micronaut.core.annotation.Nullable;

import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * What the demo does, from the command line ({@code --name value}, or {@code -name value}) or the
 * environment; a command-line option wins over its variable.
 *
 * @param target      a payments service that is already running, e.g. {@code http://localhost:8080} (a
 *                    loopback address: the fault proxy forwards only on this machine); {@code null}:
 *                    the demo starts one in-process
 * @param operations  how many logical operations to run (creates, captures, refunds in turn)
 * @param seed        the seed of the proxy's fault decisions and of the backoff jitter
 * @param drop        chance that a response is withheld after the service handled the request
 * @param reset       chance that a connection is reset before the request is forwarded
 * @param maxAttempts attempts per operation, the first included
 * @param verbose     also print the SDK's log line for every retry
 * @param help        print the usage and stop
 * @param broker      the asynchronous half's broker when the demo starts the service: {@code rabbitmq} or
 *                    {@code kafka}
 */
public record DemoSettings(@Nullable URI target, int operations, long seed, double drop, double reset, int maxAttempts,
                           boolean verbose, boolean help, String broker) {

    /** The brokers the demo can run the asynchronous half on. */
    public static final java.util.List<String> BROKERS = java.util.List.of("rabbitmq", "kafka");

    /** Default number of operations. */
    public static final int DEFAULT_OPERATIONS = 20;
    /** Default chance of a dropped response. */
    public static final double DEFAULT_DROP = 0.3;
    /** Default chance of a reset connection. */
    public static final double DEFAULT_RESET = 0.1;
    /**
     * Default attempts per operation: twice the SDK's default (4), because this network loses about
     * 37% of all requests, far more than a real one.
     */
    public static final int DEFAULT_MAX_ATTEMPTS = 8;

    static final String USAGE = String.join("\n",
        "Usage: PaymentsClientDemo [options]   (through Maven: -Dexec.args=\"options\")",
        "  --target URL         a payments service already running on this machine, e.g. http://localhost:8080",
        "                       (env DEMO_TARGET; default: the demo starts one in-process, on a free port)",
        "  --operations N       logical operations to run (default " + DEFAULT_OPERATIONS + ", env DEMO_OPERATIONS)",
        "  --seed N             seed of the injected faults (default: a random one, printed; env DEMO_SEED)",
        "  --drop P             chance 0..1 that a response is lost after the service handled the request",
        "                       (default " + DEFAULT_DROP + ", env DEMO_DROP)",
        "  --reset P            chance 0..1 that a connection is reset before the request reaches the service",
        "                       (default " + DEFAULT_RESET + ", env DEMO_RESET)",
        "  --max-attempts N     attempts per operation, 1..100 (default " + DEFAULT_MAX_ATTEMPTS
            + ", env DEMO_MAX_ATTEMPTS)",
        "  --broker NAME        the asynchronous half on rabbitmq (the default) or kafka: the local broker, else an",
        "                       embedded one (env DEMO_BROKER; RABBITMQ_URI, KAFKA_BOOTSTRAP_SERVERS)",
        "  --verbose            also print the SDK's log line for each retry (env DEMO_VERBOSE=true)",
        "  --help               this text",
        "Options take one dash or two, and their value after a space or '=': -seed 42 is --seed=42.");

    /** A bad option or value; its message says which and why. */
    public static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }

    /**
     * @param args the command line
     * @param env  the environment ({@code System.getenv()})
     * @return the settings
     * @throws UsageException for an unknown option or a bad value
     */
    public static DemoSettings parse(String[] args, Map<String, String> env) {
        String target = env.get("DEMO_TARGET");
        String operations = env.get("DEMO_OPERATIONS");
        String seed = env.get("DEMO_SEED");
        String drop = env.get("DEMO_DROP");
        String reset = env.get("DEMO_RESET");
        String maxAttempts = env.get("DEMO_MAX_ATTEMPTS");
        boolean verbose = Boolean.parseBoolean(env.getOrDefault("DEMO_VERBOSE", "false"));
        String broker = env.getOrDefault("DEMO_BROKER", "rabbitmq");
        boolean help = false;
        args = splitValues(args);
        for (int i = 0; i < args.length; i++) {
            // -name is --name; a lone "-x" stays as it is
            String arg = args[i].startsWith("-") && !args[i].startsWith("--") && args[i].length() > 2
                ? "-" + args[i] : args[i];
            switch (arg) {
                case "--help", "-h" -> help = true;
                case "--verbose", "-v" -> verbose = true;
                case "--target" -> target = value(args, ++i, arg);
                case "--operations" -> operations = value(args, ++i, arg);
                case "--seed" -> seed = value(args, ++i, arg);
                case "--drop" -> drop = value(args, ++i, arg);
                case "--reset" -> reset = value(args, ++i, arg);
                case "--max-attempts" -> maxAttempts = value(args, ++i, arg);
                case "--broker" -> broker = value(args, ++i, arg);
                default -> throw new UsageException("unknown option: " + arg);
            }
        }
        return new DemoSettings(
            target == null || target.isBlank() ? null : targetUri(target),
            intIn("operations", operations, DEFAULT_OPERATIONS, 1, 10_000),
            seed == null ? ThreadLocalRandom.current().nextLong(1, 1_000_000) : longValue("seed", seed),
            probability("drop", drop, DEFAULT_DROP),
            probability("reset", reset, DEFAULT_RESET),
            intIn("max-attempts", maxAttempts, DEFAULT_MAX_ATTEMPTS, 1, 100),
            verbose, help, broker(broker));
    }

    /** {@code --name=value} as {@code --name value}. */
    private static String[] splitValues(String[] args) {
        java.util.List<String> out = new java.util.ArrayList<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (a.startsWith("-") && eq > 1) {
                out.add(a.substring(0, eq));
                out.add(a.substring(eq + 1));
            } else {
                out.add(a);
            }
        }
        return out.toArray(String[]::new);
    }

    private static String broker(String name) {
        String b = name.trim().toLowerCase(Locale.ROOT);
        if (!BROKERS.contains(b)) {
            throw new UsageException("--broker must be one of " + BROKERS + ", was '" + name + "'");
        }
        return b;
    }

    /** @return the defaults with this seed: the demo starts the service in-process (for tests and embedding) */
    public static DemoSettings defaults(long seed) {
        return new DemoSettings(null, DEFAULT_OPERATIONS, seed, DEFAULT_DROP, DEFAULT_RESET, DEFAULT_MAX_ATTEMPTS,
            false, false, "rabbitmq");
    }

    /** @return a copy that runs against this service instead of starting one */
    public DemoSettings withTarget(URI service) {
        return new DemoSettings(service, operations, seed, drop, reset, maxAttempts, verbose, help, broker);
    }

    /** @return a copy with another number of operations */
    public DemoSettings withOperations(int n) {
        return new DemoSettings(target, n, seed, drop, reset, maxAttempts, verbose, help, broker);
    }

    /** @return a copy with other fault rates */
    public DemoSettings withFaults(double dropChance, double resetChance) {
        return new DemoSettings(target, operations, seed, dropChance, resetChance, maxAttempts, verbose, help, broker);
    }

    /** @return a copy on another broker ({@link #BROKERS}) */
    public DemoSettings withBroker(String name) {
        return new DemoSettings(target, operations, seed, drop, reset, maxAttempts, verbose, help, broker(name));
    }

    /** @return a copy with another attempt limit */
    public DemoSettings withMaxAttempts(int n) {
        return new DemoSettings(target, operations, seed, drop, reset, n, verbose, help, broker);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new UsageException(option + " needs a value");
        }
        return args[i];
    }

    private static URI targetUri(String s) {
        URI uri;
        try {
            uri = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        } catch (IllegalArgumentException e) {
            throw new UsageException("target: not a URL: " + s);
        }
        if (!"http".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new UsageException("target: an http://host:port URL is needed, got: " + s);
        }
        return uri;
    }

    private static int intIn(String what, String s, int dflt, int min, int max) {
        if (s == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(s.trim());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new UsageException(what + ": a whole number from " + min + " to " + max + " is needed, got: " + s);
    }

    private static long longValue(String what, String s) {
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(what + ": a whole number is needed, got: " + s);
        }
    }

    private static double probability(String what, String s, double dflt) {
        if (s == null) {
            return dflt;
        }
        try {
            double p = Double.parseDouble(s.trim());
            if (p >= 0 && p <= 1) {
                return p;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new UsageException(what + ": a chance from 0 to 1 (e.g. 0.3 for 30%) is needed, got: " + s);
    }

    /** @return e.g. {@code 30%} */
    static String percent(double p) {
        double v = p * 100;
        return (v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v)) + "%";
    }
}
