package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentOperation;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.examples.client.PaymentsApi.Payment;
import dev.idempotency.examples.client.PaymentsApi.Refund;
import dev.idempotency.examples.client.PaymentsApi.Stats;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.client.HttpClient;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.MalformedURLException;
import java.net.URI;
import java.net.URL;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.function.Consumer;

/**
 * The payments client demo: runs N logical payment operations against the payments example
 * through a {@link FaultProxy} that loses responses and resets connections, with the client SDK
 * ({@link IdempotentClient}: one Idempotency-Key per operation, retried with the same key), then
 * asks the service ({@code GET /stats}, directly, not through the proxy) how many side effects it
 * performed. Each successful operation must have happened exactly once, however many attempts it
 * took: side effects == successful operations.
 *
 * <p>Exit codes: {@value #EXIT_OK} the check passed; {@value #EXIT_CHECK_FAILED} it failed or
 * could not be made; {@value #EXIT_CANNOT_RUN} bad options or the service does not answer.
 */
public final class PaymentsClientDemo {

    /** The side effects equal the successful operations. */
    public static final int EXIT_OK = 0;
    /** They differ, or the service's counts could not be read after the run. */
    public static final int EXIT_CHECK_FAILED = 1;
    /** Bad options, or the payments service does not answer before the run. */
    public static final int EXIT_CANNOT_RUN = 2;

    /** How to start the service, from the repository root. */
    static final String SERVICE_COMMAND = "mvn -q -pl examples/payments-service -am -DskipTests package exec:java";

    /** What one logical operation is. */
    enum Kind { CREATE, CAPTURE, REFUND }

    /**
     * One logical operation and what became of it.
     *
     * @param number    1-based
     * @param kind      create, capture or refund
     * @param label     e.g. {@code create 10.00 EUR}
     * @param key       the Idempotency-Key all its attempts carried; {@code null} when not run
     * @param attempts  requests the SDK sent (0 when not run)
     * @param wire      what the proxy did with each request it received: {@code ok}, {@code lost}
     *                  (the service handled it, the response was dropped) or {@code reset}
     *                  (never forwarded)
     * @param succeeded whether the operation got its 2xx answer
     * @param replayed  whether that answer was the service's stored one ({@code Idempotent-Replayed})
     * @param result    the final status and what it returned, or why it failed or was skipped
     * @param failure   the SDK's exception when it failed, else {@code null}
     */
    public record Outcome(int number, Kind kind, String label, @Nullable String key, int attempts, List<String> wire,
                          boolean succeeded, boolean replayed, String result, @Nullable RuntimeException failure) {

        /** @return whether the operation was not attempted (its payment is missing, or the run stopped) */
        public boolean skipped() {
            return key == null;
        }

        /** @return whether the SDK gave up on it */
        public boolean failed() {
            return failure != null;
        }
    }

    /**
     * The run's totals.
     *
     * @param exitCode    see the {@code EXIT_*} constants
     * @param seed        the fault seed
     * @param outcomes    every operation, in order
     * @param sideEffects side effects the service counted during the run, or {@code null} when
     *                    they could not be read
     * @param dropped     responses the proxy withheld
     * @param resets      connections the proxy reset
     */
    public record Report(int exitCode, long seed, List<Outcome> outcomes, @Nullable Long sideEffects, long dropped,
                         long resets) {

        /** @return operations that got their answer */
        public long succeeded() {
            return outcomes.stream().filter(Outcome::succeeded).count();
        }

        /** @return operations the SDK gave up on */
        public long failed() {
            return outcomes.stream().filter(Outcome::failed).count();
        }

        /** @return operations not attempted */
        public long skipped() {
            return outcomes.stream().filter(Outcome::skipped).count();
        }

        /** @return requests sent over all operations */
        public long attempts() {
            return outcomes.stream().mapToLong(Outcome::attempts).sum();
        }

        /** @return answers that were replays of a stored result */
        public long replays() {
            return outcomes.stream().filter(Outcome::replayed).count();
        }
    }

    private final DemoSettings settings;
    private final PrintStream out;
    private final Consumer<Outcome> listener;

    /**
     * @param settings what to run
     * @param out      where the lines go
     * @param listener told after each operation (tests use it to stop the service mid-run)
     */
    PaymentsClientDemo(DemoSettings settings, PrintStream out, Consumer<Outcome> listener) {
        this.settings = settings;
        this.out = out;
        this.listener = listener;
    }

    /**
     * @param settings what to run
     * @param out      where the lines go
     */
    public PaymentsClientDemo(DemoSettings settings, PrintStream out) {
        this(settings, out, o -> { });
    }

    /**
     * Runs the demo and exits with its code (see the class comment).
     *
     * @param args options, see {@code --help}
     */
    public static void main(String[] args) {
        System.exit(runMain(args));
    }

    static int runMain(String[] args) {
        DemoSettings settings;
        try {
            settings = DemoSettings.parse(args, System.getenv());
        } catch (DemoSettings.UsageException e) {
            System.err.println("payments-client: " + e.getMessage());
            System.err.println(DemoSettings.USAGE);
            return EXIT_CANNOT_RUN;
        }
        if (settings.help()) {
            System.out.println(DemoSettings.USAGE);
            return EXIT_OK;
        }
        if (settings.verbose()) {
            System.setProperty("DEMO_SDK_LOG", "INFO"); // read by logback.xml, before the first logger exists
        }
        return new PaymentsClientDemo(settings, System.out).run().exitCode();
    }

    /** @return the report; everything has been printed */
    public Report run() {
        URI service = settings.service();
        InetSocketAddress upstream;
        try {
            upstream = loopback(service);
        } catch (IllegalArgumentException e) {
            out.println("Cannot run: " + e.getMessage());
            return new Report(EXIT_CANNOT_RUN, settings.seed(), List.of(), null, 0, 0);
        }
        try (HttpClient direct = HttpClient.create(url(service))) {
            Stats before;
            try {
                before = stats(direct);
            } catch (RuntimeException e) {
                out.println("The payments service does not answer at " + service + " (GET /stats: " + describe(e) + ").");
                out.println("Start it first, in another terminal, from the repository root:");
                out.println("  " + SERVICE_COMMAND);
                out.println("(another address: --service URL or PAYMENTS_URL)");
                return new Report(EXIT_CANNOT_RUN, settings.seed(), List.of(), null, 0, 0);
            }
            try (FaultProxy proxy = FaultProxy.builder()
                    .upstream(upstream)
                    .seed(settings.seed())
                    .dropResponseProbability(settings.drop())
                    .resetProbability(settings.reset())
                    .build().start();
                 HttpClient throughProxy = HttpClient.create(url(URI.create(proxy.baseUrl())))) {
                return run(direct, before, proxy, throughProxy);
            }
        }
    }

    private Report run(HttpClient direct, Stats before, FaultProxy proxy, HttpClient throughProxy) {
        IdempotentClient client = IdempotentClient.create(throughProxy, IdempotentClientConfig.custom()
            .name("payments-demo")
            .maxAttempts(settings.maxAttempts())
            // this network is far worse than a real one: give the retry budget room for it
            .budgetCapacity(Math.max(10, 2.0 * settings.operations()))
            .random(new Random(settings.seed())) // the backoff jitter, reproducible too
            .build());

        printIntro(proxy, client.config());
        out.printf(Locale.ROOT, "%-3s %-30s %-8s %-24s %-8s %s%n",
            "#", "operation", "attempts", "what the network did", "replayed", "result  [Idempotency-Key]");

        List<Outcome> outcomes = new ArrayList<>();
        Payment payment = null;   // the payment the next capture or refund works on
        boolean stopped = false;
        for (int i = 0; i < settings.operations(); i++) {
            Kind kind = Kind.values()[i % 3];
            int number = i + 1;
            Outcome outcome;
            if (stopped) {
                outcome = skipped(number, kind, i / 3, "not run: the service stopped answering");
            } else if (kind != Kind.CREATE && payment == null) {
                outcome = skipped(number, kind, i / 3, "skipped: its payment was not created");
            } else if (kind == Kind.REFUND && payment.amountCaptured() == 0) {
                outcome = skipped(number, kind, i / 3, "skipped: " + payment.id() + " was not captured");
            } else {
                int seen = proxy.decisions().size();
                long upstreamFailures = proxy.upstreamFailures();
                Op op = op(kind, i / 3, payment);
                try {
                    IdempotentResult<?> r = client.execute(op.operation(), op.bodyType());
                    Object body = r.body().orElse(null);
                    if (body instanceof Payment p) {
                        payment = p;
                    }
                    outcome = new Outcome(number, kind, op.label(), r.key(), r.attempts(),
                        wire(proxy, seen, upstreamFailures, true), true, r.replayed(), r.status() + " " + describe(body),
                        null);
                } catch (IdempotentRequestException e) {
                    outcome = new Outcome(number, kind, op.label(), e.key(), e.attempts(),
                        wire(proxy, seen, upstreamFailures, false), false, false,
                        "FAILED " + e.getClass().getSimpleName() + ": " + withoutKey(e.getMessage()), e);
                } catch (RuntimeException e) {
                    outcome = new Outcome(number, kind, op.label(), "(none)", 0,
                        wire(proxy, seen, upstreamFailures, false), false, false, "FAILED " + describe(e), e);
                }
                if (kind == Kind.CREATE && !outcome.succeeded()) {
                    payment = null;
                }
            }
            outcomes.add(outcome);
            print(outcome);
            listener.accept(outcome);
            if (outcome.failed() && !stopped) {
                try {
                    stats(direct);
                } catch (RuntimeException e) {
                    out.println("    The payments service itself does not answer any more (GET /stats: " + describe(e)
                        + "); the remaining operations are not run.");
                    stopped = true;
                }
            }
        }

        Long sideEffects = null;
        Stats after = null;
        String statsError = null;
        try {
            after = stats(direct);
            sideEffects = after.sideEffects() - before.sideEffects();
        } catch (RuntimeException e) {
            statsError = describe(e);
        }
        Report report = new Report(0, settings.seed(), List.copyOf(outcomes), sideEffects, proxy.responsesDropped(),
            proxy.resets());
        int exit = printReport(report, before, after, statsError);
        return new Report(exit, report.seed(), report.outcomes(), sideEffects, report.dropped(), report.resets());
    }

    // ------------------------------------------------------------------ the operations

    private record Op(IdempotentOperation operation, Class<?> bodyType, String label) {
    }

    /**
     * @param kind    what to do
     * @param n       0-based index of the payment this operation belongs to
     * @param payment the payment to capture or refund
     */
    private static Op op(Kind kind, int n, @Nullable Payment payment) {
        return switch (kind) {
            case CREATE -> {
                long amount = 1000 + 250L * n;
                yield new Op(IdempotentOperation.post("/payments",
                    new PaymentsApi.NewPayment(amount, "EUR", "Demo order " + (n + 1), "cus_demo")),
                    Payment.class, "create payment #" + (n + 1) + ", " + money(amount, "EUR"));
            }
            case CAPTURE -> new Op(IdempotentOperation.post("/payments/" + payment.id() + "/capture",
                new PaymentsApi.Capture()), Payment.class, "capture payment #" + (n + 1));
            case REFUND -> {
                long amount = Math.max(1, payment.amountCaptured() / 2);
                yield new Op(IdempotentOperation.post("/payments/" + payment.id() + "/refunds",
                    new PaymentsApi.NewRefund(amount, "demo refund")),
                    Refund.class, "refund " + money(amount, payment.currency()) + " of payment #" + (n + 1));
            }
        };
    }

    private static Outcome skipped(int number, Kind kind, int n, String why) {
        String label = kind.name().toLowerCase(Locale.ROOT) + " payment #" + (n + 1);
        return new Outcome(number, kind, label, null, 0, List.of(), false, false, why, null);
    }

    /**
     * What happened to each request the proxy received since {@code from}: the fault it injected
     * ({@code reset}, {@code lost}), else {@code ok} for the attempt that got the answer, and for an
     * attempt that failed without a fault {@code no answer} (the service could not be reached) or
     * {@code failed}.
     */
    private static List<String> wire(FaultProxy proxy, int from, long upstreamFailuresBefore, boolean succeeded) {
        List<FaultProxy.Decision> all = proxy.decisions();
        List<FaultProxy.Decision> mine = all.subList(Math.min(from, all.size()), all.size());
        boolean unreachable = proxy.upstreamFailures() > upstreamFailuresBefore;
        List<String> wire = new ArrayList<>();
        for (int i = 0; i < mine.size(); i++) {
            FaultProxy.Decision d = mine.get(i);
            boolean answered = succeeded && i == mine.size() - 1;
            wire.add(d.reset() ? "reset" : d.dropResponse() ? "lost" : answered ? "ok" : unreachable ? "no answer" : "failed");
        }
        return List.copyOf(wire);
    }

    /** The SDK's message without its {@code [Idempotency-Key ...]} suffix: the line shows the key anyway. */
    private static String withoutKey(String message) {
        int i = message == null ? -1 : message.lastIndexOf(" [Idempotency-Key ");
        return i < 0 ? String.valueOf(message) : message.substring(0, i);
    }

    // ------------------------------------------------------------------ output

    private void printIntro(FaultProxy proxy, IdempotentClientConfig config) {
        out.println("Payments client demo: " + settings.operations() + " operations (create, capture, refund, ...)"
            + " against " + settings.service());
        out.println("through a fault proxy at " + proxy.baseUrl() + " that");
        out.println("  - loses " + DemoSettings.percent(settings.drop())
            + " of the responses AFTER the service has handled the request (\"lost\": the client cannot tell"
            + " whether it happened),");
        out.println("  - resets " + DemoSettings.percent(settings.reset())
            + " of the connections BEFORE the request reaches the service (\"reset\").");
        out.println("Fault seed " + settings.seed() + " (the same seed gives the same faults: --seed "
            + settings.seed() + ").");
        out.println("The client SDK makes one Idempotency-Key per operation and sends it on every attempt;"
            + " up to " + config.maxAttempts() + " attempts, backoff " + config.baseDelay().toMillis()
            + " ms x" + trim(config.multiplier()) + " with full jitter.");
        out.println();
    }

    private void print(Outcome o) {
        String attempts = o.skipped() ? "-" : String.valueOf(o.attempts());
        String wire = o.wire().isEmpty() ? "-" : String.join(", ", o.wire());
        String replayed = o.skipped() || o.failed() ? "-" : o.replayed() ? "yes" : "no";
        String key = o.key() == null ? "" : "  [" + o.key() + "]";
        out.printf(Locale.ROOT, "%-3d %-30s %-8s %-24s %-8s %s%s%n",
            o.number(), o.label(), attempts, wire, replayed, o.result(), key);
    }

    private int printReport(Report r, Stats before, @Nullable Stats after, @Nullable String statsError) {
        long lostThenReplayed = r.outcomes().stream().filter(o -> o.succeeded() && o.replayed()).count();
        out.println();
        out.println("Summary");
        out.printf(Locale.ROOT, "  operations        %d: %d succeeded, %d failed, %d not run%n",
            r.outcomes().size(), r.succeeded(), r.failed(), r.skipped());
        out.printf(Locale.ROOT, "  attempts          %d (%d retries, every one with its operation's key)%n",
            r.attempts(), r.attempts() - (r.outcomes().size() - r.skipped()));
        out.printf(Locale.ROOT, "  replayed          %d (an earlier attempt's response was lost; the retry got the"
            + " service's stored answer and nothing ran twice)%n", lostThenReplayed);
        out.printf(Locale.ROOT, "  faults injected   %s lost, %s reset (seed %d)%n",
            plural(r.dropped(), "response"), plural(r.resets(), "connection"), r.seed());
        if (r.sideEffects() == null) {
            out.println("  side effects      unknown: GET " + settings.service() + "/stats failed (" + statsError + ")");
            out.println();
            out.println("CANNOT CHECK: the service's side-effect count could not be read after the run.");
            return EXIT_CHECK_FAILED;
        }
        out.printf(Locale.ROOT, "  side effects      %d (create %d, capture %d, refund %d), counted by the service"
                + " (GET %s/stats, not through the proxy)%n",
            r.sideEffects(), after.of("create") - before.of("create"), after.of("capture") - before.of("capture"),
            after.of("refund") - before.of("refund"), settings.service());
        out.println();
        if (r.sideEffects() == r.succeeded()) {
            out.printf(Locale.ROOT, "OK: %s for %s. Despite %s, every operation happened exactly once.%n",
                plural(r.sideEffects(), "side effect"), plural(r.succeeded(), "successful operation"),
                plural(r.attempts() - (r.outcomes().size() - r.skipped()), "retry", "retries"));
            return EXIT_OK;
        }
        out.printf(Locale.ROOT, "MISMATCH: %s for %s.%n", plural(r.sideEffects(), "side effect"),
            plural(r.succeeded(), "successful operation"));
        if (r.failed() > 0 && r.sideEffects() > r.succeeded()) {
            out.println("An operation can fail on the client after the service did it (its last response was lost)."
                + " Sending it again with the same key returns its stored result instead of running it twice."
                + " The failed operations and their keys:");
            r.outcomes().stream().filter(Outcome::failed).forEach(o ->
                out.println("  #" + o.number() + " " + o.label() + "  [" + o.key() + "]"));
        } else {
            out.println("Was another client using the service at the same time? The counts cover all of its clients.");
        }
        return EXIT_CHECK_FAILED;
    }

    private static String describe(@Nullable Object body) {
        if (body instanceof Payment p) {
            return p.id() + " " + p.status() + " " + money(p.amountCaptured() > 0 ? p.amountCaptured() : p.amount(),
                p.currency());
        }
        if (body instanceof Refund r) {
            return r.id() + " refunded " + money(r.amount(), "EUR");
        }
        return body == null ? "(no body)" : body.toString();
    }

    /** A failure as one line, without a stack trace: its type and the deepest message. */
    static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String s = e.getClass().getSimpleName() + (e.getMessage() != null ? ": " + e.getMessage() : "");
        if (root != e) {
            s += " (" + root.getClass().getSimpleName() + (root.getMessage() != null ? ": " + root.getMessage() : "") + ")";
        }
        return s;
    }

    private static String money(long minor, String currency) {
        return String.format(Locale.ROOT, "%d.%02d %s", minor / 100, minor % 100, currency);
    }

    private static String plural(long n, String noun) {
        return plural(n, noun, noun + "s");
    }

    private static String plural(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }

    // ------------------------------------------------------------------ plumbing

    private static Stats stats(HttpClient direct) {
        return direct.toBlocking().retrieve(HttpRequest.GET("/stats"), Stats.class);
    }

    /** The service's address as the proxy's upstream: it must be on this machine. */
    private static InetSocketAddress loopback(URI service) {
        InetAddress address;
        try {
            address = InetAddress.getByName(service.getHost());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("unknown host in " + service);
        }
        if (!address.isLoopbackAddress()) {
            throw new IllegalArgumentException(service + " is not on this machine: the fault proxy forwards only to"
                + " loopback addresses (127.0.0.1, localhost, ::1)");
        }
        int port = service.getPort() > 0 ? service.getPort() : 80;
        return new InetSocketAddress(address, port);
    }

    private static URL url(URI uri) {
        try {
            return uri.toURL();
        } catch (MalformedURLException e) {
            throw new IllegalArgumentException("not a URL: " + uri, e);
        }
    }
}
