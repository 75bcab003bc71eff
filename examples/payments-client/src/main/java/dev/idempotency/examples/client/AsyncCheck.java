package dev.idempotency.examples.client;

import dev.idempotency.examples.ledger.Ledger;

import java.io.PrintStream;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * The demo's second half (CONTRACT M): every capture that succeeded published
 * {@code payment.captured} through the service's outbox; the ledger consumer must have booked
 * each captured payment exactly once. To show that duplicates cannot change that, the demo then
 * delivers some of those messages again, as a broker does after a consumer crash, and checks that
 * the ledger did not move.
 */
final class AsyncCheck {

    /** How many booked messages the demo delivers a second time. */
    static final int DUPLICATES = 5;
    private static final Duration WAIT = Duration.ofSeconds(30);

    private AsyncCheck() {
    }

    /**
     * @param captured the payments whose capture succeeded in this run
     * @return {@link PaymentsClientDemo#EXIT_OK} when each was booked exactly once, duplicates included
     */
    static int run(PrintStream out, InProcessPaymentsService service, List<String> captured) {
        Ledger ledger = service.ledger();
        Set<String> wanted = new HashSet<>(captured);
        boolean booked = await(() -> bookedPayments(ledger).containsAll(wanted) && service.outboxDepth() == 0);
        Ledger.View first = ledger.view();

        int injected = 0;
        String injectError = null;
        boolean consumed = false;
        List<Ledger.Entry> again = first.entries().stream().limit(DUPLICATES).toList();
        try {
            service.broker().deliverAgain(again);
            injected = again.size();
            consumed = await(() -> service.broker().caughtUp());
            Thread.sleep(300); // a duplicate booking would show up by now
        } catch (Exception e) {
            injectError = DemoConsole.describe(e);
        }
        Ledger.View after = ledger.view();
        long ofThisRun = after.entries().stream().filter(e -> wanted.contains(e.payment())).count();

        out.println();
        out.println("The asynchronous side (payment.captured through the outbox to " + service.broker().describe() + ")");
        out.printf(Locale.ROOT, "  captures          %d succeeded, each publishing one message (%d still waiting in"
            + " the outbox)%n", captured.size(), service.outboxDepth());
        out.printf(Locale.ROOT, "  ledger            %d bookings, %d handler runs%n", after.entries().size(),
            after.handlerRuns());
        out.printf(Locale.ROOT, "  duplicates        %d messages delivered a second time by the demo%s%n", injected,
            injectError == null ? "" : " (could not inject all: " + injectError + ")");
        out.println();
        boolean settled = consumed || injectError != null; // duplicates that were not sent have nothing to settle
        boolean once = booked && settled && ofThisRun == captured.size() && after.handlerRuns() == first.handlerRuns()
            && after.entries().size() == first.entries().size() && after.handlerRuns() == after.entries().size();
        if (once) {
            out.printf(Locale.ROOT, "OK: ledger bookings == captures (%d == %d). Every captured payment was booked"
                + " exactly once, its duplicate deliveries included.%n", ofThisRun, captured.size());
            return PaymentsClientDemo.EXIT_OK;
        }
        out.printf(Locale.ROOT, "MISMATCH: ledger bookings %d, handler runs %d (before the duplicates %d), captures %d%s.%n",
            ofThisRun, after.handlerRuns(), first.handlerRuns(), captured.size(),
            !booked ? "; not every captured payment was booked within " + WAIT.toSeconds() + " s"
                : settled ? "" : "; the broker did not report the duplicates consumed within " + WAIT.toSeconds() + " s");
        return PaymentsClientDemo.EXIT_CHECK_FAILED;
    }

    private static Set<String> bookedPayments(Ledger ledger) {
        Set<String> ids = new HashSet<>();
        ledger.view().entries().forEach(e -> ids.add(e.payment()));
        return ids;
    }

    private static boolean await(BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }
}
