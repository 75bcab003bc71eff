package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.MessagingMetrics;
import io.micronaut.context.BeanProvider;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.context.exceptions.NonUniqueBeanException;
import io.micronaut.core.annotation.Internal;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Sends the outbox's messages to the broker (CONTRACT M3), on a thread of its own: it takes the
 * messages that are due, in publish order, hands them to the broker module's
 * {@link MessageSender}, and forgets each one only once the broker confirmed it. A message the
 * broker refuses is tried again later, with a backoff that doubles up to
 * {@code retry-backoff-max}, and holds back the later messages of its ordering key meanwhile;
 * after {@code max-attempts} refusals it is parked with the reason. A broker that cannot be
 * reached at all counts against no message: the relay waits, with the same backoff, and carries
 * on when it is back.
 *
 * <p>It runs every {@code poll-interval}, at once when this instance publishes, and at once when
 * the store reports a publish elsewhere (PostgreSQL's NOTIFY, CONTRACT M10). Where instances share
 * an outbox (PostgreSQL), the ordering keys hash into {@code partitions} partitions, each relayed
 * by one instance at a time under a lease (CONTRACT M9): the instances send in parallel, a key's
 * messages stay in order, and partitions move to the others when an instance joins, stops, or
 * crashes (after its lease). A hand-over after a crash can send its unconfirmed batch twice, which
 * consumers de-duplicate by the message id; a broker slow to confirm a batch cannot cause one, as
 * the relay renews its lease while it waits for the confirmation.
 */
@Singleton
@Requires(property = OutboxConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class OutboxRelay implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);
    private static final long RECHECK_MILLIS = 5;

    private final OutboxStore store;
    private final BeanProvider<MessageSender> senders;
    private final OutboxConfigurationProperties config;
    private final Clock clock;
    private final MessagingMetrics metrics;
    private final String owner;
    private final AtomicBoolean wakePending = new AtomicBoolean();
    private final Object lock = new Object();
    private ScheduledExecutorService thread; // guarded by lock
    private volatile boolean closed;
    private int unreachable; // consecutive whole-batch failures; guarded by this
    private Instant pausedUntil = Instant.MIN; // guarded by this
    private boolean warnedNoSender; // guarded by this
    private volatile Set<Integer> held = Set.of(); // the partitions this instance relays; written under this
    private Instant claimedAt = Instant.MIN; // guarded by this
    private AutoCloseable wakeUps; // guarded by lock

    OutboxRelay(OutboxStore store, BeanProvider<MessageSender> senders, OutboxConfigurationProperties config, Clock clock,
                MessagingMetrics metrics) {
        this.store = store;
        this.senders = senders;
        this.config = config;
        this.clock = clock;
        this.metrics = metrics;
        // pid@host, and a suffix: two applications in one JVM (tests, embedded servers) are two instances
        this.owner = ManagementFactory.getRuntimeMXBean().getName() + "/" + UUID.randomUUID().toString().substring(0, 8);
    }

    @EventListener
    void onStartup(StartupEvent event) {
        metrics.watch(store, clock);
        if (config.isRelayEnabled() && senders.isPresent()) {
            requireOneSender();
            synchronized (this) {
                try {
                    claim(clock.instant(), false); // joins now: a partition count the others do not share fails the startup
                } catch (IllegalStateException e) {
                    throw new ConfigurationException(e.getMessage(), e);
                } catch (OutboxException e) {
                    LOG.warn("idempotency outbox relay: cannot join the relays yet ({}); trying again every {}",
                        e.getMessage(), config.getPollInterval());
                }
            }
        }
        start();
    }

    /**
     * Fails the startup when more than one broker module could send (say RabbitMQ's and Kafka's
     * both on the classpath and enabled) and none is {@code @Primary}: the relay sends to one
     * broker, and would otherwise fail every pass with a bean lookup error instead of sending.
     */
    private void requireOneSender() {
        try {
            senders.get();
        } catch (NonUniqueBeanException e) {
            List<String> names = senders.stream().map(s -> s.getClass().getSimpleName()).sorted().toList();
            throw new ConfigurationException("idempotency outbox: " + names.size() + " broker modules can send the"
                + " outbox's messages (" + String.join(", ", names) + "), and the relay sends to one broker."
                + " Disable the others (idempotency.rabbitmq.enabled=false or idempotency.kafka.enabled=false),"
                + " or make the one to send with @Primary; an instance that only consumes can set"
                + " idempotency.outbox.relay-enabled=false.", e);
        }
    }

    /** Starts the relay's thread, unless it runs (or this instance does not relay). */
    void start() {
        if (!config.isRelayEnabled()) {
            return;
        }
        synchronized (lock) {
            if (thread != null || closed) {
                return;
            }
            thread = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "idempotency-outbox-relay");
                t.setDaemon(true);
                return t;
            });
            long period = config.getPollInterval().toNanos();
            thread.scheduleWithFixedDelay(this::runSafely, period, period, TimeUnit.NANOSECONDS);
            if (config.isNotify()) {
                wakeUps = store.onAppend(this::wake);
            }
        }
    }

    /** @return this instance's name among the relays sharing the outbox */
    public String owner() {
        return owner;
    }

    /**
     * @return the partitions this instance relays now (empty while it holds none, or before its first pass); never
     *     waits for a pass under way
     */
    public Set<Integer> partitions() {
        return held;
    }

    /** Has the relay look at once (after a publish on this instance); cheap, never waits. */
    @Internal
    public void wake() {
        ScheduledExecutorService t;
        synchronized (lock) {
            t = thread;
        }
        if (t != null && wakePending.compareAndSet(false, true)) {
            try {
                t.execute(this::runWoken);
            } catch (RuntimeException e) {
                wakePending.set(false); // shutting down
            }
        }
    }

    private void runSafely() {
        wakePending.set(false);
        try {
            relay();
        } catch (RuntimeException e) {
            LOG.warn("idempotency outbox relay: {}", e.toString());
        }
    }

    /**
     * A pass on a wake-up; when it sent something, one more look {@value #RECHECK_MILLIS} ms later, for
     * what was published right behind it without a wake-up of its own (stores send at most one per
     * {@code OutboxStore}'s own interval, see the PostgreSQL outbox).
     */
    private void runWoken() {
        wakePending.set(false);
        try {
            if (relay() > 0) {
                ScheduledExecutorService t;
                synchronized (lock) {
                    t = thread;
                }
                if (t != null && !closed) {
                    t.schedule(this::runSafely, RECHECK_MILLIS, TimeUnit.MILLISECONDS);
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("idempotency outbox relay: {}", e.toString());
        }
    }

    /**
     * Sends what is due, batch after batch, until nothing is. One pass at a time: a call while the
     * relay's thread is in a pass waits for it (so tests may call it directly).
     *
     * @return how many messages the broker confirmed
     */
    public synchronized int relay() {
        Instant now = clock.instant();
        if (closed || now.isBefore(pausedUntil)) {
            return 0;
        }
        MessageSender sender = senders.isPresent() ? senders.get() : null;
        if (sender == null) {
            if (!warnedNoSender && store.depth() > 0) {
                warnedNoSender = true;
                LOG.warn("idempotency outbox: messages wait but there is no MessageSender (add a broker module, e.g."
                    + " idempotency-rabbitmq): they are kept until there is one");
            }
            return 0;
        }
        if (!claim(now, false)) {
            return 0; // other instances relay every partition
        }
        int confirmed = 0;
        while (!closed) {
            if (!claim(clock.instant(), true)) {
                break;
            }
            List<OutboxRecord> batch = store.due(config.getBatchSize(), clock.instant(), held);
            if (batch.isEmpty()) {
                break;
            }
            List<String> outcomes;
            try {
                outcomes = confirmation(sender.send(batch).toCompletableFuture());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return confirmed;
            } catch (Exception e) {
                Throwable cause = e instanceof java.util.concurrent.ExecutionException || e instanceof CompletionException
                    ? e.getCause() : e;
                unreachable++;
                Duration wait = backoff(unreachable);
                pausedUntil = clock.instant().plus(wait);
                LOG.warn("idempotency outbox relay: the broker did not take {} messages ({}); {} wait, trying again in {}",
                    batch.size(), cause instanceof TimeoutException ? "no confirmation within " + config.getSendTimeout()
                        : String.valueOf(cause), store.depth(), wait);
                metrics.relayed(0, batch.size(), 0);
                return confirmed;
            }
            unreachable = 0;
            confirmed += settle(batch, outcomes);
        }
        return confirmed;
    }

    /**
     * Waits up to {@code send-timeout} for the broker's outcomes of a batch, renewing the lease on
     * this instance's partitions every third of a lease meanwhile: a broker slow to confirm must
     * not let another instance take the batch's partitions over and send it a second time. Only
     * renewed, never rebalanced: a partition given back now would be handed over mid-batch.
     */
    private List<String> confirmation(CompletableFuture<List<String>> outcomes) throws Exception {
        long deadline = System.nanoTime() + config.getSendTimeout().toNanos();
        long slice = Math.max(1, config.getRelayLease().toNanos() / 3);
        while (true) {
            long left = deadline - System.nanoTime();
            try {
                return outcomes.get(Math.min(left, slice), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                if (left <= slice) {
                    throw e;
                }
            }
            try {
                store.renew(owner, config.getRelayLease(), clock.instant());
            } catch (RuntimeException e) {
                LOG.debug("idempotency outbox relay: renewing its partitions while the broker confirms: {}", e.toString());
            }
        }
    }

    /**
     * Renews and rebalances this instance's partitions, at most once per poll interval (wake-ups
     * come with every publish), and inside a long pass before a third of the lease went by.
     *
     * @param inPass whether a pass is under way (then only the lease's renewal is due)
     * @return whether this instance holds a partition
     */
    private boolean claim(Instant now, boolean inPass) {
        Duration since = Duration.between(claimedAt, now);
        Duration every = inPass ? config.getRelayLease().dividedBy(3) : config.getPollInterval();
        if (claimedAt.equals(Instant.MIN) || since.compareTo(every) >= 0 || since.isNegative()) {
            try {
                held = Set.copyOf(store.claim(owner, config.getPartitions(), config.getRelayLease(), now));
            } catch (IllegalStateException e) {
                held = Set.of();
                throw e;
            }
            claimedAt = now;
        }
        return !held.isEmpty();
    }

    /** Forgets what was confirmed; schedules or parks what was refused. */
    private int settle(List<OutboxRecord> batch, List<String> outcomes) {
        List<Long> sent = new ArrayList<>(batch.size());
        int failed = 0;
        int parked = 0;
        Instant now = clock.instant();
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            String reason = i < outcomes.size() ? outcomes.get(i) : "no outcome from the sender";
            if (reason == null) {
                sent.add(r.id());
            } else if (r.attempts() + 1 >= config.getMaxAttempts()) {
                parked++;
                store.park(r.id(), reason);
                LOG.error("idempotency outbox: message {} to {}/{} parked after {} refusals: {}", r.messageId(),
                    r.destination(), r.routingKey(), r.attempts() + 1, reason);
            } else {
                failed++;
                store.failed(r.id(), reason, now.plus(backoff(r.attempts() + 1)));
            }
        }
        if (!sent.isEmpty()) {
            store.sent(sent);
        }
        metrics.relayed(sent.size(), failed, parked);
        return sent.size();
    }

    /** retry-backoff doubled per failure, capped at retry-backoff-max. */
    private Duration backoff(int failures) {
        Duration d = config.getRetryBackoff();
        for (int i = 1; i < failures && d.compareTo(config.getRetryBackoffMax()) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(config.getRetryBackoffMax()) > 0 ? config.getRetryBackoffMax() : d;
    }

    /** Stops the relay's thread; messages not sent yet stay in the outbox. */
    @PreDestroy
    @Override
    public void close() {
        closed = true;
        ScheduledExecutorService t;
        synchronized (lock) {
            t = thread;
            if (wakeUps != null) {
                try {
                    wakeUps.close();
                } catch (Exception e) {
                    LOG.debug("idempotency outbox relay: stopping wake-ups: {}", e.toString());
                }
            }
        }
        if (t == null) {
            return;
        }
        t.shutdownNow();
        try {
            t.awaitTermination(config.getSendTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) { // after the pass in progress: its partitions are not handed over mid-batch
            try {
                store.leave(owner);
            } catch (RuntimeException e) {
                LOG.warn("idempotency outbox relay: could not give back its partitions ({}); they move when their"
                    + " lease runs out", e.toString());
            }
            held = Set.of();
        }
    }
}
