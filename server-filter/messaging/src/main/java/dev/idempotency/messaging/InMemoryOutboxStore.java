package dev.idempotency.messaging;

import io.micronaut.context.annotation.Requires;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The default {@link OutboxStore}: messages in this JVM's memory until the broker confirmed
 * them. For one instance with the in-memory idempotency store: a message survives a broker
 * outage, not a restart of the application. The PostgreSQL store module replaces it with the
 * transactional outbox.
 *
 * <p>Bounded: past {@code idempotency.outbox.memory-capacity} waiting messages a publish fails
 * with {@link OutboxException} (its request fails with it) rather than filling the heap while
 * the broker is away. Parked messages are kept apart, and count against the capacity too.
 * Thread-safe; every operation is a short critical section on this store.
 */
@Singleton
@Requires(property = OutboxConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public class InMemoryOutboxStore implements OutboxStore {

    private final int capacity;
    private final TreeMap<Long, Pending> pending = new TreeMap<>();
    private final Map<String, Long> ids = new HashMap<>();
    private final Map<Long, Parked> parked = new HashMap<>();
    private long sequence;

    /** A message and when it may be tried next. */
    private record Pending(OutboxRecord record, Instant retryAt) {
    }

    /** A message put aside, with why. */
    public record Parked(OutboxRecord record, String reason) {
    }

    @Inject
    InMemoryOutboxStore(OutboxConfigurationProperties config) {
        this(config.getMemoryCapacity());
    }

    /** @param capacity how many messages may wait, at least 1 */
    public InMemoryOutboxStore(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
        }
        this.capacity = capacity;
    }

    @Override
    public synchronized boolean append(OutboxRecord message) {
        if (ids.containsKey(message.messageId())) {
            return false;
        }
        if (pending.size() + parked.size() >= capacity) {
            throw new OutboxException("the in-memory outbox is full (" + capacity + " messages wait for the broker):"
                + " raise idempotency.outbox.memory-capacity or bring the broker back");
        }
        long id = ++sequence;
        pending.put(id, new Pending(new OutboxRecord(id, message.messageId(), message.orderingKey(), message.destination(),
            message.routingKey(), message.contentType(), message.headers(), message.body(), 0, message.createdAt()),
            Instant.MIN));
        ids.put(message.messageId(), id);
        return true;
    }

    @Override
    public synchronized List<OutboxRecord> due(int max, Instant now) {
        List<OutboxRecord> due = new ArrayList<>();
        Set<String> held = new HashSet<>();
        for (Pending p : pending.values()) {
            if (due.size() >= max) {
                break;
            }
            String key = p.record.orderingKey();
            if (!held.add(key)) {
                continue; // one message per key per batch: a later one goes only once this one is confirmed
            }
            if (!p.retryAt.isAfter(now)) {
                due.add(p.record);
            } // else it waits for its retry, and so does everything after it in its key
        }
        return due;
    }

    @Override
    public synchronized void sent(List<Long> sent) {
        for (Long id : sent) {
            Pending p = pending.remove(id);
            if (p != null) {
                // keep the id known for a while? No: a retried operation publishing after delivery would send it
                // again; its consumers de-duplicate by id, as for any redelivery
                ids.remove(p.record.messageId());
            }
        }
    }

    @Override
    public synchronized void failed(long id, String reason, Instant retryAt) {
        Pending p = pending.get(id);
        if (p != null) {
            OutboxRecord r = p.record;
            pending.put(id, new Pending(new OutboxRecord(id, r.messageId(), r.orderingKey(), r.destination(),
                r.routingKey(), r.contentType(), r.headers(), r.body(), r.attempts() + 1, r.createdAt()), retryAt));
        }
    }

    @Override
    public synchronized void park(long id, String reason) {
        Pending p = pending.remove(id);
        if (p != null) {
            parked.put(id, new Parked(p.record, reason));
        }
    }

    @Override
    public synchronized long depth() {
        return pending.size();
    }

    @Override
    public synchronized Duration lag(Instant now) {
        if (pending.isEmpty()) {
            return Duration.ZERO;
        }
        Duration d = Duration.between(pending.firstEntry().getValue().record.createdAt(), now);
        return d.isNegative() ? Duration.ZERO : d;
    }

    @Override
    public boolean relayLease(String owner, Duration lease, Instant now) {
        return true; // one instance, one relay
    }

    /** @return the messages put aside, with their reasons (for operators and tests) */
    public synchronized List<Parked> parked() {
        return List.copyOf(parked.values());
    }
}
