package dev.idempotency.examples.ledger;

import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Singleton;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The example's ledger: one booking per captured payment, kept in memory. It counts every time
 * its consumer's handler ran, so a demo or a test can see that a message delivered several times
 * was booked once ({@code handlerRuns == entries}).
 */
@Singleton
public final class Ledger {

    /** One booking. */
    @Serdeable
    public record Entry(String payment, long amount, String currency, String messageId) {
    }

    /** {@code GET /ledger}: the bookings, oldest first, and how often the handler ran. */
    @Serdeable
    public record View(List<Entry> entries, long handlerRuns) {
    }

    private final Map<String, Entry> entries = new ConcurrentHashMap<>();
    private final List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong handlerRuns = new AtomicLong();

    /** Books a captured payment; a second booking of one payment would replace nothing and be counted. */
    void book(Entry entry) {
        handlerRuns.incrementAndGet();
        if (entries.putIfAbsent(entry.payment(), entry) == null) {
            order.add(entry.payment());
        }
    }

    public View view() {
        List<Entry> all = new ArrayList<>();
        synchronized (order) {
            for (String p : order) {
                all.add(entries.get(p));
            }
        }
        return new View(all, handlerRuns.get());
    }
}
