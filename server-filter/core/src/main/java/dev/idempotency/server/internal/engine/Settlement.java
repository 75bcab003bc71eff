package dev.idempotency.server.internal.engine;

import dev.idempotency.server.internal.response.Attributes;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * How a held record ends (CONTRACT S12, S14): the status policy that decides between storing
 * and releasing a result, and the store calls that do it.
 *
 * <p>Completion is tried once before the response goes out, so a retry right after it replays.
 * When the store fails then, the caller still gets its response and the completion is retried in
 * the background with backoff for up to half the lease: a short store outage must not leave the
 * key to expire and the handler to run a second time. The lease holds for those retries only if
 * its last renewal reached the store; when the store was down for longer, another request may
 * take over and these retries are fenced off. A release is awaited too (a retry right after a 5xx
 * runs again rather than meeting 409); when it fails it is retried in the background with
 * backoff (up to 1 s apart) until the store answers or the lease ends, so a key whose release a
 * failover cut off is free soon after the promotion (CONTRACT S24). The WARN line says the
 * release is pending, an INFO line when it landed, an ERROR line when it was given up.
 *
 * <p>A completion the store refuses (no in-progress record with the lease's token) is counted
 * as fenced ({@code idempotency.completions.fenced}) and logged with what the record shows,
 * when the store offers {@link StoreInspection}: taken over, gone, or unreadable. A record
 * completed with the lease's own token is no takeover but an earlier attempt whose answer was
 * lost after the write; it is logged at INFO and not counted.
 *
 * <p>A completion that is given up (half the lease passed, or the application stopped with
 * retries still pending) is counted ({@code idempotency.completions.abandoned}) and logged once
 * at ERROR with the key's hash.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class Settlement {

    private static final long FIRST_RETRY_MILLIS = 100;
    /** The longest wait between two tries of a release: a failover's promotion takes about a second. */
    private static final long MAX_RELEASE_RETRY_MILLIS = 1000;
    /** What the ERROR line of a completion given up adds when the application is stopping. */
    private static final String STOPPING = ", and the application is stopping, so it is not tried again";
    /** A settlement done at once; shared, since a completed stage never changes. */
    private static final CompletableFuture<Void> SETTLED = CompletableFuture.completedFuture(null);

    private final IdempotencyConfiguration config;
    private final IdempotencyStore store;
    private final StoreCalls calls;
    private final IdempotencyScheduler scheduler;
    private final IdempotencyMetrics metrics;
    /** The configured release statuses, indexed by status: a load instead of a boxed set lookup. */
    private final boolean[] releaseStatuses;
    /**
     * Completion retries scheduled and not yet started. A retry runs only if it takes itself out
     * first; {@link #close()} gives up the ones it takes out, so each is either tried or counted
     * as abandoned, never both, whichever of this bean and the scheduler stops first.
     */
    private final Set<Lease> pendingRetries = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    Settlement(IdempotencyConfiguration config, IdempotencyStore store, StoreCalls calls,
               IdempotencyScheduler scheduler, IdempotencyMetrics metrics) {
        this.config = config;
        this.store = store;
        this.calls = calls;
        this.scheduler = scheduler;
        this.metrics = metrics;
        this.releaseStatuses = new boolean[500];
        for (int status : config.getReleaseStatuses()) {
            if (status >= 0 && status < 500) { // 100-499, as the configuration checks; 5xx release anyway
                releaseStatuses[status] = true;
            }
        }
    }

    /** Whether the result releases the key instead of being stored (S14). */
    boolean releases(HttpRequest<?> request, MutableHttpResponse<?> response) {
        int status = response.code();
        if (status >= 500 || (status >= 0 && releaseStatuses[status])) {
            return true;
        }
        // the attribute lookups only when their answer matters
        return !config.isReplayHandledExceptions() && Attributes.madeFromException(request, response);
    }

    /**
     * Stores the result of {@code lease}'s holder.
     *
     * @return completes (never exceptionally) once the first attempt got an answer or failed
     */
    CompletableFuture<Void> complete(Lease lease, StoredResponse stored, Duration retention) {
        CompletableFuture<Boolean> first = tryComplete(lease, stored, retention);
        if (first.isDone()) { // a store that answers at once (in memory): no stage for the step
            retryUnlessAnswered(first.getNow(Boolean.FALSE), lease, stored, retention); // never fails: see tryComplete
            return SETTLED;
        }
        return first.thenAccept(answered -> retryUnlessAnswered(answered, lease, stored, retention));
    }

    private void retryUnlessAnswered(boolean answered, Lease lease, StoredResponse stored, Duration retention) {
        if (!answered) {
            long giveUpAt = System.nanoTime() + lease.duration().toNanos() / 2;
            retryLater(lease, stored, retention, FIRST_RETRY_MILLIS, giveUpAt);
        }
    }

    /**
     * Removes the in-progress record of {@code lease}, so the next request with the key runs. When
     * the store fails, the release goes on in the background ({@link #releaseInBackground}).
     *
     * @return completes (never exceptionally) once the store answered or failed
     */
    CompletableFuture<Void> release(Lease lease) {
        return calls.traced("release", lease.request(), () -> store.release(lease.key().storeKey(), lease.token()))
            .handle((released, failure) -> {
                if (failure != null) {
                    releaseInBackground(lease, failure);
                }
                return null;
            });
    }

    /**
     * Retries the release of {@code lease}, which just failed with {@code failure}, in the
     * background with backoff until the store answers (released, or fenced: someone else holds
     * the key now) or the lease ends, when the key is free anyway. After a failover the retries
     * reach whichever node is primary then, so a key whose release was cut off is free within
     * about the promotion, not a whole lease later.
     */
    void releaseInBackground(Lease lease, Throwable failure) {
        long giveUpAt = System.nanoTime() + lease.duration().toNanos();
        LOG.warn("idempotency release failed key={} ({}): release pending, retried in the background until it lands"
            + " or the lease ends", lease.key(), StoreCalls.describe(failure));
        retryReleaseLater(lease, FIRST_RETRY_MILLIS, giveUpAt, 1);
    }

    private void retryReleaseLater(Lease lease, long delayMillis, long giveUpAt, int tries) {
        if (closed || System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis) > giveUpAt) {
            LOG.error("idempotency release given up key={} after {} tries{}: the key stays in progress until its lease"
                + " ends, then a retry runs the handler", lease.key(), tries, closed ? STOPPING : "");
            return;
        }
        IdempotencyScheduler.Cancellable retry = scheduler.schedule(() -> calls.timed("release",
                () -> store.release(lease.key().storeKey(), lease.token()))
            .whenComplete((released, failure) -> {
                if (failure != null) {
                    retryReleaseLater(lease, Math.min(delayMillis * 2, MAX_RELEASE_RETRY_MILLIS), giveUpAt, tries + 1);
                } else {
                    LOG.info("idempotency release landed key={} after {} tries ({})", lease.key(), tries + 1,
                        Boolean.TRUE.equals(released) ? "released" : "the key had moved on: taken over or gone");
                }
            }), delayMillis, TimeUnit.MILLISECONDS);
        if (retry == null) {
            LOG.error("idempotency release given up key={} after {} tries{}: the key stays in progress until its lease"
                + " ends, then a retry runs the handler", lease.key(), tries, STOPPING);
        }
    }

    private void retryLater(Lease lease, StoredResponse stored, Duration retention, long delayMillis, long giveUpAt) {
        if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis) > giveUpAt) {
            abandoned(lease, "");
            return;
        }
        pendingRetries.add(lease);
        IdempotencyScheduler.Cancellable retry = scheduler.schedule(() -> {
            if (pendingRetries.remove(lease)) {
                tryComplete(lease, stored, retention).thenAccept(answered -> {
                    if (!answered) {
                        retryLater(lease, stored, retention, delayMillis * 2, giveUpAt);
                    }
                });
            }
        }, delayMillis, TimeUnit.MILLISECONDS);
        // stopping: the scheduler no longer takes tasks, or this bean has given up its pending ones
        // (perhaps before this one was among them); whoever takes it out reports it
        if ((retry == null || closed) && pendingRetries.remove(lease)) {
            abandoned(lease, STOPPING);
        }
    }

    /** Counts and logs a completion given up; {@code why} is empty, or says that the application is stopping. */
    private void abandoned(Lease lease, String why) {
        metrics.completionAbandoned();
        LOG.error("idempotency completion failed key={}: the result could not be stored (the response went out"
            + " regardless, unless the caller's connection had closed){}; the key stays locked until its lease"
            + " expires (it may have already, if its renewals failed too), then a retry runs the handler again",
            lease.key(), why);
    }

    /** Gives up the completion retries not started yet: the application is stopping. */
    @PreDestroy
    void close() {
        closed = true;
        for (Lease lease : pendingRetries) {
            if (pendingRetries.remove(lease)) {
                abandoned(lease, STOPPING);
            }
        }
    }

    /** @return {@code true} when the store answered (stored or fenced), {@code false} when it failed */
    private CompletableFuture<Boolean> tryComplete(Lease lease, StoredResponse stored, Duration retention) {
        return calls.traced("complete", lease.request(), () -> store.complete(lease.key().storeKey(), lease.token(), stored, retention))
            .handle((done, failure) -> {
                if (failure != null) {
                    LOG.warn("idempotency completion failed key={} (retried with backoff for up to half the"
                        + " lease): {}", lease.key(), StoreCalls.describe(failure));
                    return false;
                }
                if (!done) {
                    fencedUnlessStoredEarlier(lease);
                }
                return true;
            });
    }

    /**
     * The store found no in-progress record with the lease's token. Usually the lease was taken
     * over; but an attempt whose answer was lost after the store wrote it (a timeout; a command
     * that a reconnecting client may send again) leaves the record completed with this very
     * token, which is no takeover. When the store offers {@link StoreInspection} the record tells
     * which, and what else happened to it; the check runs only after a refusal, never on the way
     * to the response. Everything but the lost answer is counted as fenced, the report that asks
     * an operator to look.
     */
    private void fencedUnlessStoredEarlier(Lease lease) {
        if (!(store instanceof StoreInspection inspection)) {
            fenced(lease, "the lease no longer matches: a later request took it over, or the record is gone");
            return;
        }
        calls.timed("find", () -> inspection.find(lease.key().storeKey()))
            .orTimeout(lease.duration().toMillis(), TimeUnit.MILLISECONDS)
            .whenComplete((found, failure) -> {
                if (failure != null || found == null) {
                    fenced(lease, "the lease no longer matches, and the record could not be read to tell why ("
                        + (failure == null ? "no answer" : StoreCalls.describe(failure)) + ")");
                    return;
                }
                RecordInfo record = found.orElse(null);
                if (record == null || record.state() == RecordInfo.State.RELEASED) {
                    fenced(lease, "the record is gone (released, purged or expired), so a retry runs the operation"
                        + " again");
                } else if (record.fencingToken() != lease.token()) {
                    fenced(lease, "the lease was taken over by a later request, whose result stands");
                } else if (record.state() == RecordInfo.State.COMPLETED) {
                    LOG.info("idempotency completion of key={} had been stored by an earlier attempt whose answer"
                        + " was lost", lease.key());
                } else {
                    fenced(lease, "the store refused it although the record is still in progress with this"
                        + " request's token");
                }
            });
    }

    private void fenced(Lease lease, String why) {
        metrics.completionFenced();
        LOG.warn("idempotency completion fenced key={}: {}", lease.key(), why);
    }
}
