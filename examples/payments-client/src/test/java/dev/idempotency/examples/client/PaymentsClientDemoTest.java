package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentCalls;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.NonRetryableStatusException;
import dev.idempotency.examples.client.PaymentsClientDemo.Call;
import dev.idempotency.examples.client.PaymentsClientDemo.Outcome;
import dev.idempotency.examples.client.PaymentsClientDemo.Report;
import dev.idempotency.examples.client.PaymentsJson.Capture;
import dev.idempotency.examples.client.PaymentsJson.NewPayment;
import dev.idempotency.examples.client.PaymentsJson.NewRefund;
import dev.idempotency.examples.client.PaymentsJson.Payment;
import dev.idempotency.examples.client.PaymentsJson.Refund;
import dev.idempotency.examples.client.PaymentsJson.Stats;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.context.ApplicationContext;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.client.HttpClient;
import io.micronaut.inject.qualifiers.Qualifiers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.MalformedURLException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The demo end to end with real parts only: the SDK (programmatic and declarative), the FaultProxy
 * and the payments service itself, in-process under its real Idempotency-Key filter, as the
 * demo's one command starts it.
 */
class PaymentsClientDemoTest {

    /** The service most tests share; each test reads the side effects of its own run as a difference. */
    private static InProcessPaymentsService service;

    @BeforeAll
    static void startService() {
        service = InProcessPaymentsService.start();
    }

    @AfterAll
    static void stopService() {
        service.close();
    }

    /** Output captured from the demo's own stream and from System.out/err (logback writes there). */
    private static final class Captured implements AutoCloseable {
        final ByteArrayOutputStream demo = new ByteArrayOutputStream();
        final ByteArrayOutputStream console = new ByteArrayOutputStream();
        final PrintStream demoOut = new PrintStream(demo, true, StandardCharsets.UTF_8);
        private final PrintStream oldOut = System.out;
        private final PrintStream oldErr = System.err;

        Captured() {
            PrintStream both = new PrintStream(console, true, StandardCharsets.UTF_8);
            System.setOut(both);
            System.setErr(both);
        }

        String demo() {
            return demo.toString(StandardCharsets.UTF_8);
        }

        String console() {
            return console.toString(StandardCharsets.UTF_8);
        }

        @Override
        public void close() {
            System.setOut(oldOut);
            System.setErr(oldErr);
            oldOut.print(demo());       // keep the output in the test log
            oldOut.print(console());
        }
    }

    private static String plural(long n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }

    private static Report run(DemoSettings settings, Captured out, Consumer<Outcome> listener) {
        return new PaymentsClientDemo(settings, out.demoOut, listener).run();
    }

    private static URL url(URI uri) {
        try {
            return uri.toURL();
        } catch (MalformedURLException e) {
            throw new IllegalArgumentException(e);
        }
    }

    /** The service's own counts, read directly (not through a proxy). */
    private static Stats stats(URI service) {
        try (HttpClient http = HttpClient.create(url(service))) {
            return http.toBlocking().retrieve(HttpRequest.GET("/stats"), Stats.class);
        }
    }

    /** @return whether something still accepts connections on the port after up to 5 s */
    private static boolean stillListening(int port) throws InterruptedException {
        for (int i = 0; i < 50; i++) {
            try (Socket ignored = new Socket("127.0.0.1", port)) {
                Thread.sleep(100);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }

    @Test
    @DisplayName("C1/C9 end to end: 30% lost responses, 10% resets, seed 42 -> side effects == successful operations,"
        + " retries with one key per operation, lost responses come back as replays, exit 0")
    void faultsOnEverySuccessfulOperationHappensOnce() {
        try (Captured out = new Captured()) {
            DemoSettings settings = DemoSettings.defaults(42).withTarget(service.uri()).withOperations(30);
            Stats before = stats(service.uri());

            Report report = run(settings, out, o -> { });

            Stats after = stats(service.uri());
            assertThat(report.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_OK);
            assertThat(report.outcomes()).hasSize(30);
            assertThat(report.failed()).isZero();
            assertThat(report.skipped()).isZero();
            assertThat(report.succeeded()).isEqualTo(30);
            // the service's own count, as the demo read it and as read here
            assertThat(report.sideEffects()).isEqualTo(30).isEqualTo(after.sideEffects() - before.sideEffects());
            assertThat(after.of("create") - before.of("create")).isEqualTo(10);
            assertThat(after.of("capture") - before.of("capture")).isEqualTo(10);
            assertThat(after.of("refund") - before.of("refund")).isEqualTo(10);
            // the handlers ran once per operation, none refused: no retry re-executed an operation
            assertThat(after.handlerExecutions() - before.handlerExecutions()).isEqualTo(30);
            assertThat(after.businessRejections() - before.businessRejections()).isZero();
            assertThat(report.outcomes()).extracting(Outcome::key).doesNotHaveDuplicates();
            // refunds carry the demo's own key (declarative @IdempotencyKey), the others the SDK's UUIDs
            assertThat(report.outcomes()).allSatisfy(o -> assertThat(o.key())
                .matches(o.kind() == PaymentsClientDemo.Kind.REFUND ? "refund-pay_[0-9a-f]+" : "[0-9a-f-]{36}"));

            // the faults really happened, and were survived by retrying, through both APIs
            assertThat(report.dropped()).isPositive();
            assertThat(report.resets()).isPositive();
            assertThat(report.attempts()).isGreaterThan(30);
            assertThat(report.replays()).isPositive();
            assertThat(report.outcomes()).anySatisfy(o -> {
                assertThat(o.kind()).isEqualTo(PaymentsClientDemo.Kind.CREATE);
                assertThat(o.replayed()).isTrue();
            });
            assertThat(report.outcomes()).anySatisfy(o -> {
                assertThat(o.kind()).isNotEqualTo(PaymentsClientDemo.Kind.CREATE);
                assertThat(o.replayed()).isTrue();
            });
            for (Outcome o : report.outcomes()) {
                // the proxy saw each attempt; only the last one got through
                assertThat(o.wire()).as("operation %d", o.number()).hasSize(o.attempts());
                assertThat(o.wire().get(o.attempts() - 1)).isEqualTo("ok");
                assertThat(o.wire().subList(0, o.attempts() - 1)).allSatisfy(w -> assertThat(w).isIn("reset", "lost"));
                // a replay exactly when an earlier attempt reached the service and its answer was lost
                assertThat(o.replayed()).as("operation %d replayed", o.number()).isEqualTo(o.wire().contains("lost"));
            }
            assertThat(report.dropped()).isEqualTo(report.outcomes().stream()
                .mapToLong(o -> o.wire().stream().filter("lost"::equals).count()).sum());

            // the printed report says the same
            String text = out.demo();
            assertThat(text).contains("against " + service.uri() + ",", "Fault seed 42",
                "loses each response with a 30% chance", "resets each connection with a 10% chance");
            for (Outcome o : report.outcomes()) {
                assertThat(text).contains("[" + o.key() + "]");
            }
            assertThat(text)
                .contains("operations        30: 30 succeeded, 0 failed, 0 not run")
                .contains("attempts          " + report.attempts() + " (" + (report.attempts() - 30) + " retries")
                .contains("replayed          " + report.replays() + " (")
                .contains("faults injected   " + plural(report.dropped(), "response") + " lost, "
                    + plural(report.resets(), "connection") + " reset, in " + plural(report.attempts(), "attempt")
                    + " (seed 42)")
                .contains("side effects      30 (create 10, capture 10, refund 10)")
                .contains("OK: side effects == successful operations (30 == 30).");
            assertThat(text.lines().filter(l -> l.matches("^\\d+\\s+(create|capture|refund) .*"))).hasSize(30);
            assertThat(out.console()).doesNotContain("\tat ", "Exception in thread");
        }
    }

    @Test
    @DisplayName("The one command: no target -> the demo starts the payments service in-process on a free port,"
        + " runs through the proxy, prints the report, exits 0 and stops the service")
    void withoutTargetTheDemoStartsTheServiceItself() throws InterruptedException {
        String text;
        int code;
        try (Captured out = new Captured()) {
            code = PaymentsClientDemo.runMain(new String[] {"--seed", "11", "--operations", "9"});
            text = out.console();
        }
        assertThat(code).isEqualTo(PaymentsClientDemo.EXIT_OK);
        Matcher m = Pattern.compile("started in-process at http://127\\.0\\.0\\.1:(\\d+) \\(in-memory store\\)")
            .matcher(text);
        assertThat(m.find()).as(text).isTrue();
        int port = Integer.parseInt(m.group(1));
        assertThat(port).isNotEqualTo(8080);
        assertThat(text)
            .contains("Fault seed 11", "operations        9: 9 succeeded, 0 failed, 0 not run",
                "side effects      9 (create 3, capture 3, refund 3), counted by the service (GET http://127.0.0.1:"
                    + port + "/stats",
                "OK: side effects == successful operations (9 == 9).")
            .doesNotContain("\tat ", "Exception in thread", "logback.xml");
        assertThat(stillListening(port)).as("the in-process service stopped").isFalse();
    }

    @Test
    @DisplayName("M8: -broker kafka: the asynchronous half runs on Kafka (an embedded broker when none answers),"
        + " every capture booked once, its duplicate deliveries included")
    void onKafka() {
        String text;
        int code;
        try (Captured out = new Captured()) {
            code = PaymentsClientDemo.runMain(new String[] {"--broker=kafka", "--seed", "12", "--operations", "6"});
            text = out.console();
        }
        assertThat(code).as(text).isEqualTo(PaymentsClientDemo.EXIT_OK);
        assertThat(text).contains("(environment kafka)", "payment.captured through the outbox to ",
                "OK: ledger bookings == captures (2 == 2).", "duplicates        2 messages delivered a second time")
            .containsAnyOf("an embedded Kafka broker, as no Kafka answered", "Kafka at ")
            .doesNotContain("\tat ", "Exception in thread", "NonUniqueBean");
    }

    @Test
    @DisplayName("The same seed gives the same faults, attempts and replays")
    void sameSeedSameRun() {
        List<List<String>> first;
        List<List<String>> second;
        try (Captured out = new Captured()) {
            DemoSettings settings = DemoSettings.defaults(7).withTarget(service.uri()).withOperations(12);
            first = run(settings, out, o -> { }).outcomes().stream().map(Outcome::wire).toList();
            second = run(settings, out, o -> { }).outcomes().stream().map(Outcome::wire).toList();
        }
        assertThat(second).isEqualTo(first);
        assertThat(first).anySatisfy(w -> assertThat(w).hasSizeGreaterThan(1));
    }

    @Test
    @DisplayName("Mismatch, exit 1: every response lost and one attempt each -> the service did operations the"
        + " client saw fail; the report lists them with their keys")
    void mismatchWhenOperationsFailAfterTheServiceDidThem() {
        String text;
        int code;
        try (Captured out = new Captured()) {
            code = PaymentsClientDemo.runMain(new String[] {
                "--drop", "1", "--reset", "0", "--max-attempts", "1", "--operations", "6", "--seed", "5"});
            text = out.console();
        }
        assertThat(code).isEqualTo(PaymentsClientDemo.EXIT_CHECK_FAILED);
        assertThat(text)
            .contains("operations        6: 0 succeeded, 2 failed, 4 not run")
            .contains("side effects      2 (create 2, capture 0, refund 0)")
            .contains("MISMATCH: side effects != successful operations (2 != 0).")
            .contains("The failed operations and their keys:")
            .containsPattern("  #1 create payment #1, 10\\.00 EUR  \\[[0-9a-f-]{36}]")
            .containsPattern("  #4 create payment #2, 12\\.50 EUR  \\[[0-9a-f-]{36}]")
            .doesNotContain("\tat ", "Exception in thread");
    }

    @Test
    @DisplayName("Mismatch, exit 1: another client changes the service during the run; the report says so")
    void mismatchWhenAnotherClientUsesTheService() {
        Report report;
        String text;
        try (Captured out = new Captured(); HttpClient other = HttpClient.create(url(service.uri()))) {
            DemoSettings settings = DemoSettings.defaults(9).withTarget(service.uri()).withOperations(3)
                .withFaults(0, 0);
            report = run(settings, out, o -> {
                if (o.number() == 1) {
                    other.toBlocking().exchange(HttpRequest.POST("/payments",
                        new NewPayment(700, "EUR", "someone else's", "cus_other"))
                        .header("Idempotency-Key", "\"other-client-" + System.nanoTime() + "\""));
                }
            });
            text = out.demo();
        }
        assertThat(report.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_CHECK_FAILED);
        assertThat(report.succeeded()).isEqualTo(3);
        assertThat(report.sideEffects()).isEqualTo(4);
        assertThat(text)
            .contains("MISMATCH: side effects != successful operations (4 != 3).")
            .contains("Was another client using the service at the same time?");
    }

    @Test
    @DisplayName("Target down from the start: a clear message with the command that starts it, exit 2, no stack trace")
    void targetDownAtStart() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // free, and nothing listens once closed
        }
        String text;
        int code;
        try (Captured out = new Captured()) {
            code = PaymentsClientDemo.runMain(new String[] {"--target", "http://127.0.0.1:" + port, "--seed", "1"});
            text = out.console();
        }
        assertThat(code).isEqualTo(PaymentsClientDemo.EXIT_CANNOT_RUN);
        assertThat(text)
            .contains("The payments service does not answer at http://127.0.0.1:" + port)
            .contains("Connection refused")
            .contains(PaymentsClientDemo.SERVICE_COMMAND)
            .contains("exec:java@service")
            .contains("or leave out --target")
            .doesNotContain("\tat ", "Exception in thread");
    }

    @Test
    @DisplayName("C9: the service stops mid-run -> the next operation fails with a typed SDK exception (key and"
        + " attempts shown), the rest are not run, the check cannot be made: exit 1, no stack trace")
    void serviceStopsMidRun() {
        AtomicBoolean stopped = new AtomicBoolean();
        Report report;
        String text;
        String console;
        try (Captured out = new Captured(); InProcessPaymentsService own = InProcessPaymentsService.start()) {
            DemoSettings settings = DemoSettings.defaults(3).withTarget(own.uri()).withOperations(6).withFaults(0, 0)
                .withMaxAttempts(3);
            report = run(settings, out, o -> {
                if (o.number() == 2) {
                    own.stop();
                    stopped.set(true);
                }
            });
            text = out.demo();
            console = out.console();
        }
        assertThat(stopped).isTrue();
        assertThat(report.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_CHECK_FAILED);
        assertThat(report.sideEffects()).isNull();
        assertThat(report.outcomes()).hasSize(6);
        assertThat(report.outcomes().subList(0, 2)).allSatisfy(o -> assertThat(o.succeeded()).isTrue());

        Outcome third = report.outcomes().get(2);
        assertThat(third.failed()).isTrue();
        assertThat(third.failure()).isInstanceOf(IdempotentRequestException.class);
        IdempotentRequestException e = (IdempotentRequestException) third.failure();
        assertThat(third.key()).isEqualTo(e.key()).isEqualTo("refund-" + report.outcomes().get(1).result()
            .split(" ")[1]);
        assertThat(third.attempts()).isEqualTo(e.attempts()).isBetween(1, 3);
        assertThat(third.wire()).hasSize(third.attempts()).containsOnly("no answer");
        assertThat(report.outcomes().subList(3, 6)).allSatisfy(o -> assertThat(o.skipped()).isTrue());

        assertThat(text)
            .contains("FAILED " + e.getClass().getSimpleName() + ": ", "[" + e.key() + "]")
            .contains("The payments service itself does not answer any more")
            .contains("not run: the service stopped answering")
            .contains("operations        6: 2 succeeded, 1 failed, 3 not run")
            .contains("CANNOT CHECK");
        assertThat(text + console).doesNotContain("\tat ", "Exception in thread");
    }

    @Test
    @DisplayName("The programmatic snippet: a lost response -> the retry with the same key is a replay, one payment;"
        + " when the SDK gives up, sending again with e.key() returns the stored result instead of a second payment")
    void programmaticSnippet() {
        try (FaultProxy proxy = FaultProxy.builder().upstream(service.uri().getPort()).seed(1).build().start();
             HttpClient http = HttpClient.create(url(URI.create(proxy.baseUrl())))) {
            Stats before = stats(service.uri());
            IdempotentClient client = PaymentsClientDemo.idempotentClient(http, DemoSettings.defaults(1));

            proxy.failNext(FaultProxy.Fault.DROP_RESPONSE);
            Call call = PaymentsClientDemo.create(client, new NewPayment(1234, "EUR", "snippet", "cus_snippet"));
            assertThat(call.failure()).isNull();
            IdempotentResult<?> created = call.result();
            assertThat(created.attempts()).isEqualTo(2);
            assertThat(created.replayed()).isTrue();
            assertThat(created.status()).isEqualTo(201);
            assertThat(created.body()).get().isInstanceOfSatisfying(Payment.class,
                p -> assertThat(p.amount()).isEqualTo(1234));
            assertThat(stats(service.uri()).of("create") - before.of("create")).isEqualTo(1);

            IdempotentClient once = PaymentsClientDemo.idempotentClient(http,
                DemoSettings.defaults(1).withMaxAttempts(1));
            proxy.failNext(FaultProxy.Fault.DROP_RESPONSE);
            Call failed = PaymentsClientDemo.create(once, new NewPayment(4321, "EUR", "snippet", "cus_snippet"));
            assertThat(failed.result()).isNull();
            assertThat(failed.failure().attempts()).isEqualTo(1);
            assertThat(stats(service.uri()).of("create") - before.of("create")).isEqualTo(2); // it did happen
            IdempotentResult<Payment> again = client.execute(IdempotentRequest.post("/payments",
                new NewPayment(4321, "EUR", "snippet", "cus_snippet")).key(failed.failure().key()), Payment.class);
            assertThat(again.replayed()).isTrue();
            assertThat(again.key()).isEqualTo(failed.failure().key());
            assertThat(stats(service.uri()).of("create") - before.of("create")).isEqualTo(2); // and only once
        }
    }

    @Test
    @DisplayName("The declarative snippet (PaymentsApi in the demo's ClientContext): a lost response is replayed;"
        + " the caller's @IdempotencyKey makes a second refund call a replay; business refusals are typed;"
        + " the context holds none of the service's beans or settings")
    void declarativeSnippet() {
        try (FaultProxy proxy = FaultProxy.builder().upstream(service.uri().getPort()).seed(1).build().start();
             HttpClient http = HttpClient.create(url(URI.create(proxy.baseUrl())));
             ApplicationContext context = ClientContext.start(
                 Map.of("micronaut.http.services.payments.url", proxy.baseUrl()),
                 PaymentsClientDemo.idempotentClient(http, DemoSettings.defaults(1)))) {
            IdempotentClient client = context.getBean(IdempotentClient.class, Qualifiers.byName("payments"));
            PaymentsApi api = context.getBean(PaymentsApi.class);
            Payment payment = (Payment) PaymentsClientDemo.create(client,
                new NewPayment(2000, "EUR", "declarative", "cus_snippet")).result().body().orElseThrow();
            Stats before = stats(service.uri());

            proxy.failNext(FaultProxy.Fault.DROP_RESPONSE);
            Payment captured = api.capture(payment.id(), new Capture());
            assertThat(captured.amountCaptured()).isEqualTo(2000);
            IdempotentResult<?> capture = IdempotentCalls.lastResult().orElseThrow();
            assertThat(capture.attempts()).isEqualTo(2);
            assertThat(capture.replayed()).isTrue();

            String key = "refund-" + payment.id();
            Refund first = api.refund(payment.id(), new NewRefund(500, "test"), key);
            assertThat(IdempotentCalls.lastResult().orElseThrow().replayed()).isFalse();
            Refund second = api.refund(payment.id(), new NewRefund(500, "test"), key);
            IdempotentResult<?> replay = IdempotentCalls.lastResult().orElseThrow();
            assertThat(replay.replayed()).isTrue();
            assertThat(replay.key()).isEqualTo(key);
            assertThat(second.id()).isEqualTo(first.id());

            // a second capture (new key): the service refuses it, the SDK does not retry a 409 of the handler
            Throwable refused = catchThrowable(() -> api.capture(payment.id(), new Capture()));
            assertThat(refused).isInstanceOf(NonRetryableStatusException.class);
            assertThat(((NonRetryableStatusException) refused).status()).hasValue(409);
            assertThat(((NonRetryableStatusException) refused).attempts()).isEqualTo(1);

            Stats after = stats(service.uri());
            assertThat(after.of("capture") - before.of("capture")).isEqualTo(1);
            assertThat(after.of("refund") - before.of("refund")).isEqualTo(1);

            // the client's context: none of the service's active parts, none of its settings
            assertThat(activeServiceParts(context)).isEmpty();
            assertThat(context.getProperty("micronaut.application.name", String.class)).isEmpty();
            assertThat(context.getProperty("micronaut.serde.serialization.inclusion", String.class)).isEmpty();
        }
    }

    @Test
    @DisplayName("The client's context stays a client's in the service's environment (postgres exported for the"
        + " service): none of the service's or the filter's beans, so no schema migration wanting a datasource")
    void clientContextInTheServiceEnvironment() {
        System.setProperty("micronaut.environments", "postgres"); // what MICRONAUT_ENVIRONMENTS=postgres does
        try (ApplicationContext context = ClientContext.start(
                 Map.of("micronaut.http.services.payments.url", "http://127.0.0.1:8080"))) {
            assertThat(context.getEnvironment().getActiveNames()).contains("postgres", "payments-client");
            assertThat(context.getBean(PaymentsApi.class)).isNotNull();
            assertThat(activeServiceParts(context)).isEmpty();
        } finally {
            System.clearProperty("micronaut.environments");
        }
    }

    /**
     * The service's beans that would do something in a context that is not a server: the filter
     * and its startup validation and purge job, the stores, and the postgres environment's schema
     * migration and repository. (Controllers are inert without a server.)
     */
    private static List<String> activeServiceParts(ApplicationContext context) {
        List<String> parts = List.of("IdempotencyFilter", "RoutePolicies", "InMemoryStorePurger",
            "RedisIdempotencyStoreFactory", "PostgresIdempotencyStore", "PaymentsSchema", "JdbcPaymentRepository");
        return context.getAllBeanDefinitions().stream().map(d -> d.getBeanType().getSimpleName())
            .filter(parts::contains).toList();
    }

    @Test
    @DisplayName("Options: command line over environment, one dash or two, bad values named, non-loopback target refused")
    void options() {
        DemoSettings s = DemoSettings.parse(new String[] {"--seed", "5", "-drop", "0.5", "--operations", "9"},
            Map.of("DEMO_SEED", "1", "DEMO_RESET", "0.2", "DEMO_TARGET", "http://localhost:9090/"));
        assertThat(s.seed()).isEqualTo(5);
        assertThat(s.drop()).isEqualTo(0.5);
        assertThat(s.reset()).isEqualTo(0.2);
        assertThat(s.operations()).isEqualTo(9);
        assertThat(s.target()).isEqualTo(URI.create("http://localhost:9090"));
        assertThat(s.maxAttempts()).isEqualTo(DemoSettings.DEFAULT_MAX_ATTEMPTS);
        assertThat(DemoSettings.parse(new String[] {"-target", "http://127.0.0.1:8080"}, Map.of()).target())
            .isEqualTo(URI.create("http://127.0.0.1:8080"));
        assertThat(DemoSettings.parse(new String[0], Map.of()).target()).as("default: in-process").isNull();
        assertThat(DemoSettings.parse(new String[0], Map.of()).broker()).isEqualTo("rabbitmq");
        assertThat(DemoSettings.parse(new String[] {"--broker=kafka"}, Map.of()).broker()).isEqualTo("kafka");
        assertThat(DemoSettings.parse(new String[] {"-broker", "Kafka"}, Map.of("DEMO_BROKER", "rabbitmq")).broker())
            .isEqualTo("kafka");
        assertThat(DemoSettings.parse(new String[] {"--seed=5"}, Map.of()).seed()).isEqualTo(5);
        assertThat(catchThrowable(() -> DemoSettings.parse(new String[] {"--broker", "nats"}, Map.of())))
            .isInstanceOf(DemoSettings.UsageException.class).hasMessage("--broker must be one of [rabbitmq, kafka], was 'nats'");

        assertThat(catchThrowable(() -> DemoSettings.parse(new String[] {"--drop", "30"}, Map.of())))
            .isInstanceOf(DemoSettings.UsageException.class).hasMessageContaining("drop").hasMessageContaining("30");

        try (Captured out = new Captured()) {
            Report r = new PaymentsClientDemo(DemoSettings.defaults(1).withTarget(URI.create("http://192.0.2.1:8080")),
                out.demoOut).run();
            assertThat(r.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_CANNOT_RUN);
            assertThat(out.demo()).contains("not on this machine");
        }
    }

    @Test
    @DisplayName("Argument errors: exit 2, the bad option or value named, then the usage; nothing is started")
    void argumentErrors() {
        Map<String[], String> cases = Map.of(
            new String[] {"--drop", "30"}, "payments-client: drop: a chance from 0 to 1 (e.g. 0.3 for 30%) is needed, got: 30",
            new String[] {"--bogus"}, "payments-client: unknown option: --bogus",
            new String[] {"--operations"}, "payments-client: --operations needs a value",
            new String[] {"--max-attempts", "0"}, "payments-client: max-attempts: a whole number from 1 to 100 is needed, got: 0",
            new String[] {"-target", "ftp://localhost:21"},
            "payments-client: target: an http://host:port URL is needed, got: ftp://localhost:21");
        cases.forEach((args, message) -> {
            String text;
            int code;
            try (Captured out = new Captured()) {
                code = PaymentsClientDemo.runMain(args);
                text = out.console();
            }
            assertThat(code).as(message).isEqualTo(PaymentsClientDemo.EXIT_CANNOT_RUN);
            assertThat(text).startsWith(message + "\n").contains("Usage: PaymentsClientDemo [options]", "--target URL")
                .doesNotContain("\tat ", "Payments client demo:");
        });
    }

    @Test
    @DisplayName("the network column counts repeats, so a long retry stays one narrow column")
    void networkColumn() {
        assertThat(DemoConsole.wire(List.of("ok"))).isEqualTo("ok");
        assertThat(DemoConsole.wire(List.of("lost", "lost", "lost", "reset", "lost", "ok")))
            .isEqualTo("lost x3, reset, lost, ok");
    }
}
