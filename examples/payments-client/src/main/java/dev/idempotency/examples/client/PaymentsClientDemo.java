package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentCalls;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.examples.client.PaymentsJson.Capture;
import dev.idempotency.examples.client.PaymentsJson.NewPayment;
import dev.idempotency.examples.client.PaymentsJson.NewRefund;
import dev.idempotency.examples.client.PaymentsJson.Payment;
import dev.idempotency.examples.client.PaymentsJson.Stats;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.context.ApplicationContext;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.client.HttpClient;
import io.micronaut.inject.qualifiers.Qualifiers;

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
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

/**
 * The payments client demo: runs N logical payment operations against the payments example
 * through a {@link FaultProxy} that loses responses and resets connections, with the client SDK
 * (one Idempotency-Key per operation, retried with the same key: creates through the programmatic
 * {@link IdempotentClient}, captures and refunds through the declarative {@link PaymentsApi}), then
 * asks the service ({@code GET /stats}, directly, not through the proxy) how many side effects it
 * performed. Each successful operation must have happened exactly once, however many attempts it
 * took: side effects == successful operations.
 *
 * <p>The service is the one at {@link DemoSettings#target()}, or, by default, one the demo starts
 * in-process on a free port ({@link InProcessPaymentsService}) and stops at the end. With the
 * in-process service the demo also checks the asynchronous half ({@link AsyncCheck}): each
 * successful capture published {@code payment.captured} through the outbox, and the ledger
 * consumer booked each captured payment exactly once, duplicate deliveries included; and a chain
 * of two hops ({@link ChainCheck}): captures charged through the card gateway, faults on both hops,
 * the payments service killed after its first charge, and the gateway's charges equal to the
 * payments.
 *
 * <p>Exit codes: {@value #EXIT_OK} the check passed; {@value #EXIT_CHECK_FAILED} it failed or
 * could not be made; {@value #EXIT_CANNOT_RUN} bad options, or the service does not start or
 * answer.
 */
public final class PaymentsClientDemo {

    /** The side effects equal the successful operations. */
    public static final int EXIT_OK = 0;
    /** They differ, or the service's counts could not be read after the run. */
    public static final int EXIT_CHECK_FAILED = 1;
    /** Bad options, or the payments service does not answer before the run. */
    public static final int EXIT_CANNOT_RUN = 2;

    /** How to start the service, from the repository root. */
    static final String SERVICE_COMMAND = "mvn -q -pl examples/payments-service -am -DskipTests package exec:java@service";

    private static final String LOGBACK_PROPERTY = "logback.configurationFile";
    /** This demo's logback configuration, a classpath resource. */
    static final String LOGBACK_CONFIGURATION = "payments-client-logback.xml";

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
    private final DemoConsole console;
    /** The payments whose capture succeeded in this run, in order: the ledger must book each once. */
    private final List<String> capturedPayments = new ArrayList<>();

    /**
     * @param settings what to run
     * @param out      where the lines go
     * @param listener told after each operation (tests use it to stop the service mid-run)
     */
    PaymentsClientDemo(DemoSettings settings, PrintStream out, Consumer<Outcome> listener) {
        this.settings = settings;
        this.out = out;
        this.listener = listener;
        this.console = new DemoConsole(out, settings);
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
        // The payments service's jar, on the classpath for the in-process service, has a logback.xml
        // too: name this demo's configuration, so logback neither guesses nor warns about it.
        if (System.getProperty(LOGBACK_PROPERTY) == null) {
            System.setProperty(LOGBACK_PROPERTY, LOGBACK_CONFIGURATION);
        }
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
            System.setProperty("DEMO_SDK_LOG", "INFO"); // read by the logback configuration, before the first logger exists
        }
        return new PaymentsClientDemo(settings, System.out).run().exitCode();
    }

    /** @return the report; everything has been printed */
    public Report run() {
        URI target = settings.target();
        if (target != null) {
            return run(target, null);
        }
        InProcessPaymentsService service;
        try {
            service = InProcessPaymentsService.start(settings.broker());
        } catch (RuntimeException e) {
            out.println("Cannot start the payments service in-process: " + DemoConsole.describe(e));
            return cannotRun();
        }
        try (service) {
            Report report = run(service.uri(), service);
            if (report.exitCode() == EXIT_CANNOT_RUN) {
                return report;
            }
            int async = AsyncCheck.run(out, service, capturedPayments);
            int chain = ChainCheck.run(out, settings.seed());
            int exit = report.exitCode() != EXIT_OK ? report.exitCode() : async != EXIT_OK ? async : chain;
            return new Report(exit, report.seed(), report.outcomes(), report.sideEffects(), report.dropped(),
                report.resets());
        }
    }

    /**
     * @param service   the payments service
     * @param inProcess the service when the demo started it itself, else {@code null}
     */
    private Report run(URI service, @Nullable InProcessPaymentsService inProcess) {
        InetSocketAddress upstream;
        try {
            upstream = loopback(service);
        } catch (IllegalArgumentException e) {
            out.println("Cannot run: " + e.getMessage());
            return cannotRun();
        }
        try (HttpClient direct = HttpClient.create(url(service))) {
            Stats before;
            try {
                before = stats(direct);
            } catch (RuntimeException e) {
                out.println("The payments service does not answer at " + service + " (GET /stats: " + DemoConsole.describe(e) + ").");
                if (inProcess == null) {
                    out.println("Start it first, in another terminal, from the repository root:");
                    out.println("  " + SERVICE_COMMAND);
                    out.println("(or leave out --target: the demo then starts one itself)");
                }
                return cannotRun();
            }
            try (FaultProxy proxy = FaultProxy.builder()
                    .upstream(upstream)
                    .seed(settings.seed())
                    .dropResponseProbability(settings.drop())
                    .resetProbability(settings.reset())
                    .build().start();
                 HttpClient throughProxy = HttpClient.create(url(URI.create(proxy.baseUrl())));
                 // @IdempotentCall("payments") on PaymentsApi runs with this same client's settings
                 ApplicationContext clientContext = ClientContext.start(
                     Map.of("micronaut.http.services.payments.url", proxy.baseUrl()),
                     idempotentClient(throughProxy, settings))) {
                IdempotentClient client = clientContext.getBean(IdempotentClient.class, Qualifiers.byName("payments"));
                PaymentsApi api = clientContext.getBean(PaymentsApi.class);
                String where = inProcess == null ? String.valueOf(service)
                    : "the payments service, started in-process at " + service + " ("
                        + (inProcess.environments().isEmpty() ? "in-memory store"
                            : "environment " + String.join(", ", inProcess.environments())) + ")";
                return run(where, service, direct, before, proxy, client, api);
            }
        }
    }

    private Report cannotRun() {
        return new Report(EXIT_CANNOT_RUN, settings.seed(), List.of(), null, 0, 0);
    }

    private Report run(String where, URI service, HttpClient direct, Stats before, FaultProxy proxy,
                       IdempotentClient client, PaymentsApi api) {
        console.intro(where, proxy, client.config());
        out.printf(Locale.ROOT, "%-3s %-30s %-8s %-24s %-8s %s%n",
            "#", "operation", "attempts", "what the network did", "replayed", "result  [Idempotency-Key]");

        List<Outcome> outcomes = new ArrayList<>();
        Payment payment = null;   // the payment the next capture or refund works on
        boolean stopped = false;
        for (int i = 0; i < settings.operations(); i++) {
            Kind kind = Kind.values()[i % 3];
            int number = i + 1;
            int n = i / 3;        // 0-based index of the payment this operation belongs to
            Outcome outcome;
            if (stopped) {
                outcome = skipped(number, kind, n, "not run: the service stopped answering");
            } else if (kind != Kind.CREATE && payment == null) {
                outcome = skipped(number, kind, n, "skipped: its payment was not created");
            } else if (kind == Kind.REFUND && payment.amountCaptured() == 0) {
                outcome = skipped(number, kind, n, "skipped: " + payment.id() + " was not captured");
            } else {
                int seen = proxy.decisions().size();
                long upstreamFailures = proxy.upstreamFailures();
                long amount = kind == Kind.CREATE ? 1000 + 250L * n : Math.max(1, payment.amountCaptured() / 2);
                String label = switch (kind) {
                    case CREATE -> "create payment #" + (n + 1) + ", " + DemoConsole.money(amount, "EUR");
                    case CAPTURE -> "capture payment #" + (n + 1);
                    case REFUND -> "refund " + DemoConsole.money(amount, payment.currency()) + " of payment #" + (n + 1);
                };
                try {
                    Call call = switch (kind) {
                        case CREATE -> create(client, new NewPayment(amount, "EUR", "Demo order " + (n + 1), "cus_demo"));
                        case CAPTURE -> capture(api, payment);
                        case REFUND -> refund(api, payment, amount);
                    };
                    if (call.result() != null) {
                        IdempotentResult<?> r = call.result();
                        Object body = r.body().orElse(null);
                        if (body instanceof Payment p) {
                            payment = p;
                            if (kind == Kind.CAPTURE && p.amountCaptured() > 0 && !capturedPayments.contains(p.id())) {
                                capturedPayments.add(p.id());
                            }
                        }
                        outcome = new Outcome(number, kind, label, r.key(), r.attempts(),
                            wire(proxy, seen, upstreamFailures, true), true, r.replayed(),
                            r.status() + " " + DemoConsole.describe(body), null);
                    } else {
                        IdempotentRequestException e = call.failure();
                        outcome = new Outcome(number, kind, label, e.key(), e.attempts(),
                            wire(proxy, seen, upstreamFailures, false), false, false,
                            "FAILED " + e.getClass().getSimpleName() + ": " + withoutKey(e.getMessage()), e);
                    }
                } catch (RuntimeException e) {
                    outcome = new Outcome(number, kind, label, "(none)", 0,
                        wire(proxy, seen, upstreamFailures, false), false, false, "FAILED " + DemoConsole.describe(e), e);
                }
                if (kind == Kind.CREATE && !outcome.succeeded()) {
                    payment = null;
                }
            }
            outcomes.add(outcome);
            console.print(outcome);
            listener.accept(outcome);
            if (outcome.failed() && !stopped) {
                try {
                    stats(direct);
                } catch (RuntimeException e) {
                    out.println("    The payments service itself does not answer any more (GET /stats: " + DemoConsole.describe(e)
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
            statsError = DemoConsole.describe(e);
        }
        Report report = new Report(0, settings.seed(), List.copyOf(outcomes), sideEffects, proxy.responsesDropped(),
            proxy.resets());
        int exit = console.report(report, service, before, after, statsError);
        return new Report(exit, report.seed(), report.outcomes(), sideEffects, report.dropped(), report.resets());
    }

    // ------------------------------------------------------------------ the operations, through the SDK

    /**
     * How the SDK ended one operation: with its result ({@code result}), or with the exception it
     * gave up with ({@code failure}).
     */
    record Call(@Nullable IdempotentResult<?> result, @Nullable IdempotentRequestException failure) {

        static Call of(IdempotentResult<?> result) {
            return new Call(result, null);
        }

        static Call failed(IdempotentRequestException failure) {
            return new Call(null, failure);
        }
    }

    // tag::programmatic[]
    /** The programmatic client, on a Micronaut {@code HttpClient} that points at the service (here: the proxy). */
    static IdempotentClient idempotentClient(HttpClient http, DemoSettings settings) {
        return IdempotentClient.create(http, IdempotentClientConfig.custom()
            .name("payments")
            .maxAttempts(settings.maxAttempts())                        // this network is far worse than a real one,
            .budgetCapacity(Math.max(10, 2.0 * settings.operations()))  // so allow more attempts and retries
            .random(new Random(settings.seed()))                        // a reproducible backoff jitter
            .build());
    }

    /** {@code POST /payments}: one operation, one Idempotency-Key, as many attempts as it takes. */
    static Call create(IdempotentClient payments, NewPayment newPayment) {
        try {
            IdempotentResult<Payment> created = payments.execute(
                IdempotentRequest.post("/payments", newPayment), Payment.class);
            // created.body(): the payment; created.key(): the key that all created.attempts() carried;
            // created.replayed(): an earlier attempt ran but its response was lost, and this is the
            // service's stored answer (the payment was created once)
            return Call.of(created);
        } catch (IdempotentRequestException e) {
            // The SDK gave up: a refusal it must not retry (NonRetryableStatusException, a 4xx with
            // e.problem()), or the attempts, the deadline or the retry budget ran out. Then the payment
            // may exist: sent again later with .key(e.key()), it is created if it was not, and its
            // stored result comes back if it was. A new key could pay twice.
            return Call.failed(e);
        }
    }
    // end::programmatic[]

    /** {@code POST /payments/{id}/capture} through the declarative client: the same policy, one key per call. */
    static Call capture(PaymentsApi api, Payment payment) {
        try {
            api.capture(payment.id(), new Capture());
            return Call.of(IdempotentCalls.lastResult().orElseThrow());
        } catch (IdempotentRequestException e) {
            return Call.failed(e);
        }
    }

    /**
     * {@code POST /payments/{id}/refunds} through the declarative client, with the demo's own key: it
     * refunds each payment once, so the key names the refund by its payment.
     */
    static Call refund(PaymentsApi api, Payment payment, long amount) {
        try {
            api.refund(payment.id(), new NewRefund(amount, "demo refund"), "refund-" + payment.id());
            return Call.of(IdempotentCalls.lastResult().orElseThrow());
        } catch (IdempotentRequestException e) {
            return Call.failed(e);
        }
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
