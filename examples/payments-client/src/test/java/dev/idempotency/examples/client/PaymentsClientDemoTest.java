package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.examples.client.PaymentsClientDemo.Outcome;
import dev.idempotency.examples.client.PaymentsClientDemo.Report;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo end to end with real parts: the SDK, the FaultProxy and a Netty server under the real
 * Idempotency-Key filter ({@link TestPaymentsService}).
 */
class PaymentsClientDemoTest {

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

    @Test
    @DisplayName("C1/C9 end to end: 30% lost responses, 10% resets, seed 42 -> side effects == successful operations,"
        + " retries with one key per operation, lost responses come back as replays, exit 0")
    void faultsOnEverySuccessfulOperationHappensOnce() {
        try (Captured out = new Captured(); TestPaymentsService service = TestPaymentsService.start()) {
            DemoSettings settings = DemoSettings.defaults(service.uri(), 42).withOperations(30);

            Report report = run(settings, out, o -> { });

            TestPaymentsService.Ledger ledger = service.ledger();
            assertThat(report.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_OK);
            assertThat(report.outcomes()).hasSize(30);
            assertThat(report.failed()).isZero();
            assertThat(report.skipped()).isZero();
            assertThat(report.succeeded()).isEqualTo(30);
            // the service's own count, read by the demo and straight from the handlers
            assertThat(report.sideEffects()).isEqualTo(30).isEqualTo(ledger.total());
            assertThat(ledger.sideEffects.get("create").get()).isEqualTo(10);
            assertThat(ledger.sideEffects.get("capture").get()).isEqualTo(10);
            assertThat(ledger.sideEffects.get("refund").get()).isEqualTo(10);
            // every handler ran once per key: no retry re-executed an operation
            assertThat(ledger.executions.get()).isEqualTo(30);
            assertThat(ledger.keysExecutedTwice.get()).isZero();
            assertThat(report.outcomes()).extracting(Outcome::key).doesNotHaveDuplicates();

            // the faults really happened, and were survived by retrying
            assertThat(report.dropped()).isPositive();
            assertThat(report.resets()).isPositive();
            assertThat(report.outcomes()).anySatisfy(o -> assertThat(o.attempts()).isGreaterThan(1));
            assertThat(report.replays()).isPositive();
            assertThat(report.attempts()).isGreaterThan(30);
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
            assertThat(text).contains("Fault seed 42", "loses 30% of the responses", "resets 10% of the connections");
            for (Outcome o : report.outcomes()) {
                assertThat(text).contains("[" + o.key() + "]");
            }
            assertThat(text)
                .contains(String.format("operations        30: 30 succeeded, 0 failed, 0 not run"))
                .contains("attempts          " + report.attempts() + " (" + (report.attempts() - 30) + " retries")
                .contains("replayed          " + report.replays() + " (")
                .contains("faults injected   " + plural(report.dropped(), "response") + " lost, "
                    + plural(report.resets(), "connection") + " reset (seed 42)")
                .contains("side effects      30 (create 10, capture 10, refund 10)")
                .contains("OK: 30 side effects for 30 successful operations.");
            assertThat(text.lines().filter(l -> l.matches("^\\d+\\s+(create|capture|refund) .*"))).hasSize(30);
            assertThat(out.console()).doesNotContain("\tat ", "Exception in thread");
        }
    }

    @Test
    @DisplayName("The same seed gives the same faults, attempts and replays")
    void sameSeedSameRun() {
        List<List<String>> first;
        List<List<String>> second;
        try (Captured out = new Captured(); TestPaymentsService service = TestPaymentsService.start()) {
            DemoSettings settings = DemoSettings.defaults(service.uri(), 7).withOperations(12);
            first = run(settings, out, o -> { }).outcomes().stream().map(Outcome::wire).toList();
            second = run(settings, out, o -> { }).outcomes().stream().map(Outcome::wire).toList();
        }
        assertThat(second).isEqualTo(first);
        assertThat(first).anySatisfy(w -> assertThat(w).hasSizeGreaterThan(1));
    }

    @Test
    @DisplayName("Service down from the start: a clear message with the command that starts it, exit 2, no stack trace")
    void serviceDownAtStart() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // free, and nothing listens once closed
        }
        String text;
        int code;
        try (Captured out = new Captured()) {
            code = PaymentsClientDemo.runMain(new String[] {"--service", "http://127.0.0.1:" + port, "--seed", "1"});
            text = out.console();
        }
        assertThat(code).isEqualTo(PaymentsClientDemo.EXIT_CANNOT_RUN);
        assertThat(text)
            .contains("The payments service does not answer at http://127.0.0.1:" + port)
            .contains("Connection refused")
            .contains(PaymentsClientDemo.SERVICE_COMMAND)
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
        try (Captured out = new Captured(); TestPaymentsService service = TestPaymentsService.start()) {
            DemoSettings settings = DemoSettings.defaults(service.uri(), 3).withOperations(6).withFaults(0, 0)
                .withMaxAttempts(3);
            report = run(settings, out, o -> {
                if (o.number() == 2) {
                    service.stop();
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
        assertThat(third.key()).isEqualTo(e.key()).isNotBlank();
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
    @DisplayName("Options: command line over environment, bad values named, non-loopback service refused")
    void options() {
        DemoSettings s = DemoSettings.parse(new String[] {"--seed", "5", "--drop", "0.5", "--operations", "9"},
            Map.of("DEMO_SEED", "1", "DEMO_RESET", "0.2", "PAYMENTS_URL", "http://localhost:9090/"));
        assertThat(s.seed()).isEqualTo(5);
        assertThat(s.drop()).isEqualTo(0.5);
        assertThat(s.reset()).isEqualTo(0.2);
        assertThat(s.operations()).isEqualTo(9);
        assertThat(s.service()).isEqualTo(URI.create("http://localhost:9090"));
        assertThat(s.maxAttempts()).isEqualTo(DemoSettings.DEFAULT_MAX_ATTEMPTS);

        assertThat(org.assertj.core.api.Assertions.catchThrowable(
            () -> DemoSettings.parse(new String[] {"--drop", "30"}, Map.of())))
            .isInstanceOf(DemoSettings.UsageException.class).hasMessageContaining("drop").hasMessageContaining("30");

        try (Captured out = new Captured()) {
            Report r = new PaymentsClientDemo(DemoSettings.defaults(URI.create("http://192.0.2.1:8080"), 1),
                out.demoOut).run();
            assertThat(r.exitCode()).isEqualTo(PaymentsClientDemo.EXIT_CANNOT_RUN);
            assertThat(out.demo()).contains("not on this machine");
        }
    }
}
