package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.examples.client.PaymentsJson.Payment;
import dev.idempotency.examples.client.PaymentsJson.Refund;
import dev.idempotency.examples.client.PaymentsJson.Stats;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.core.annotation.Nullable;

import java.io.PrintStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the demo prints: the introduction, one line per operation and the summary with its
 * verdict, plus the one-line descriptions of payments, money and failures the checks share.
 */
final class DemoConsole {

    private final PrintStream out;
    private final DemoSettings settings;

    DemoConsole(PrintStream out, DemoSettings settings) {
        this.out = out;
        this.settings = settings;
    }

    void intro(String where, FaultProxy proxy, IdempotentClientConfig config) {
        out.println("Payments client demo: " + settings.operations() + " operations (create, capture, refund, ...)");
        out.println("against " + where + ",");
        out.println("through a fault proxy at " + proxy.baseUrl() + " that");
        out.println("  - loses each response with a " + DemoSettings.percent(settings.drop())
            + " chance, AFTER the service has handled the request (\"lost\": the client cannot tell"
            + " whether it happened),");
        out.println("  - resets each connection with a " + DemoSettings.percent(settings.reset())
            + " chance, BEFORE the request reaches the service (\"reset\").");
        out.println("Each fault is a random draw, so a short run can see more or fewer than those shares;"
            + " the summary counts what happened.");
        out.println("Fault seed " + settings.seed() + " (the same seed gives the same faults: --seed "
            + settings.seed() + ").");
        out.println("The client SDK makes one Idempotency-Key per operation and sends it on every attempt;"
            + " up to " + config.maxAttempts() + " attempts, backoff " + config.baseDelay().toMillis()
            + " ms x" + trim(config.multiplier()) + " with full jitter.");
        out.println("Creates go through the programmatic IdempotentClient, captures and refunds through the declarative"
            + " PaymentsApi (@IdempotentCall).");
        out.println();
    }

    void print(PaymentsClientDemo.Outcome o) {
        String attempts = o.skipped() ? "-" : String.valueOf(o.attempts());
        String wire = o.wire().isEmpty() ? "-" : wire(o.wire());
        String replayed = o.skipped() || o.failed() ? "-" : o.replayed() ? "yes" : "no";
        String key = o.key() == null ? "" : "  [" + o.key() + "]";
        out.printf(Locale.ROOT, "%-3d %-30s %-8s %-24s %-8s %s%s%n",
            o.number(), o.label(), attempts, wire, replayed, o.result(), key);
    }

    /** What each attempt met, repeats counted so the column stays narrow: {@code lost x3, reset, ok}. */
    static String wire(List<String> attempts) {
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < attempts.size(); ) {
            int j = i;
            while (j < attempts.size() && attempts.get(j).equals(attempts.get(i))) {
                j++;
            }
            parts.add(j - i > 1 ? attempts.get(i) + " x" + (j - i) : attempts.get(i));
            i = j;
        }
        return String.join(", ", parts);
    }

    int report(PaymentsClientDemo.Report r, URI service, Stats before, @Nullable Stats after, @Nullable String statsError) {
        long lostThenReplayed = r.outcomes().stream().filter(o -> o.succeeded() && o.replayed()).count();
        out.println();
        out.println("Summary");
        out.printf(Locale.ROOT, "  operations        %d: %d succeeded, %d failed, %d not run%n",
            r.outcomes().size(), r.succeeded(), r.failed(), r.skipped());
        out.printf(Locale.ROOT, "  attempts          %d (%d retries, every one with its operation's key)%n",
            r.attempts(), r.attempts() - (r.outcomes().size() - r.skipped()));
        out.printf(Locale.ROOT, "  replayed          %d (an earlier attempt's response was lost; the retry got the"
            + " service's stored answer and nothing ran twice)%n", lostThenReplayed);
        out.printf(Locale.ROOT, "  faults injected   %s lost, %s reset, in %s (seed %d)%n",
            plural(r.dropped(), "response"), plural(r.resets(), "connection"), plural(r.attempts(), "attempt"), r.seed());
        if (r.sideEffects() == null) {
            out.println("  side effects      unknown: GET " + service + "/stats failed (" + statsError + ")");
            out.println();
            out.println("CANNOT CHECK: the service's side-effect count could not be read after the run.");
            return PaymentsClientDemo.EXIT_CHECK_FAILED;
        }
        out.printf(Locale.ROOT, "  side effects      %d (create %d, capture %d, refund %d), counted by the service"
                + " (GET %s/stats, not through the proxy)%n",
            r.sideEffects(), after.of("create") - before.of("create"), after.of("capture") - before.of("capture"),
            after.of("refund") - before.of("refund"), service);
        out.println();
        if (r.sideEffects() == r.succeeded()) {
            out.printf(Locale.ROOT, "OK: side effects == successful operations (%d == %d). Despite %s, every operation"
                    + " happened exactly once.%n", r.sideEffects(), r.succeeded(),
                plural(r.attempts() - (r.outcomes().size() - r.skipped()), "retry", "retries"));
            return PaymentsClientDemo.EXIT_OK;
        }
        out.printf(Locale.ROOT, "MISMATCH: side effects != successful operations (%d != %d).%n", r.sideEffects(),
            r.succeeded());
        if (r.failed() > 0 && r.sideEffects() > r.succeeded()) {
            out.println("An operation can fail on the client after the service did it (its last response was lost)."
                + " Sending it again with the same key returns its stored result instead of running it twice."
                + " The failed operations and their keys:");
            r.outcomes().stream().filter(PaymentsClientDemo.Outcome::failed).forEach(o ->
                out.println("  #" + o.number() + " " + o.label() + "  [" + o.key() + "]"));
        } else {
            out.println("Was another client using the service at the same time? The counts cover all of its clients.");
        }
        return PaymentsClientDemo.EXIT_CHECK_FAILED;
    }

    static String describe(@Nullable Object body) {
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

    static String money(long minor, String currency) {
        return String.format(Locale.ROOT, "%d.%02d %s", minor / 100, minor % 100, currency);
    }

    static String plural(long n, String noun) {
        return plural(n, noun, noun + "s");
    }

    private static String plural(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
