package dev.idempotency.server.internal.engine;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.UnconfirmedAcquireException;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.response.ResponseCapture;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.MutableHttpResponse;
import jakarta.inject.Singleton;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * The default execution mode (CONTRACT S10, S12-S15): the acquired record is protected by a
 * lease, kept alive by {@link LeaseKeeper} while the handler runs and while a streamed response
 * flows; then {@link Settlement} stores or releases the result. Nothing here waits: each step
 * goes on from a callback when the one before it completes (on the request's event loop), and
 * one stage per attempt carries the outcome. The handler starts on the event loop, from where
 * the route goes to the executor it asked for.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class LeasedMode implements ExecutionMode {

    private final IdempotencyStore store;
    private final StoreCalls calls;
    private final LeaseKeeper keeper;
    private final ResponseCapture capture;
    private final Settlement settlement;
    private final Report report;
    private final StepJournals journals;

    LeasedMode(IdempotencyStore store, StoreCalls calls, LeaseKeeper keeper, ResponseCapture capture,
               Settlement settlement, Report report, StepJournals journals) {
        this.journals = journals;
        this.store = store;
        this.calls = calls;
        this.keeper = keeper;
        this.capture = capture;
        this.settlement = settlement;
        this.report = report;
    }

    @Override
    public CompletionStage<Attempt> attempt(Exchange ex) {
        String traceparent = report.traceparent(ex); // kept with the record, for a 409's link (CONTRACT O4)
        CompletableFuture<AcquireResult> acquired = calls.acquire(ex.context(), () -> traceparent == null
            ? store.acquire(ex.key().storeKey(), ex.fingerprint(), ex.policy().lease())
            : store.acquire(ex.key().storeKey(), ex.fingerprint(), ex.policy().lease(), traceparent));
        // one stage for the whole attempt, completed by callbacks: a chain of stages would cost a
        // stage and a completion for every step of every request
        CompletableFuture<Attempt> attempt = new CompletableFuture<>();
        ex.loop().whenComplete(acquired, (result, failure) -> {
            try {
                if (failure != null) {
                    IdempotencyStoreException storeFailure = StoreCalls.asStoreFailure(failure);
                    if (storeFailure instanceof UnconfirmedAcquireException unconfirmed && !unconfirmed.released()) {
                        // the record was written but not confirmed, and the store could not release it:
                        // release it from here until it lands (S24), not leave it locked for the lease
                        settlement.releaseInBackground(new Lease(ex.key(), unconfirmed.fencingToken(), ex.policy().lease(), ex.context()),
                            unconfirmed.getCause() != null ? unconfirmed.getCause() : unconfirmed);
                    }
                    attempt.complete(new Attempt.StoreFailed(storeFailure));
                } else if (result instanceof AcquireResult.Acquired a) {
                    execute(ex, a, attempt);
                } else {
                    attempt.complete(new Attempt.NotAcquired(result));
                }
            } catch (RuntimeException | Error e) {
                attempt.completeExceptionally(e);
            }
        });
        return attempt;
    }

    /** Runs the handler under the lease, then settles its result; completes {@code attempt}. */
    private void execute(Exchange ex, AcquireResult.Acquired acquired, CompletableFuture<Attempt> attempt) {
        Lease lease = new Lease(ex.key(), acquired.fencingToken(), ex.policy().lease(), ex.context());
        if (acquired.takeover()) {
            report.metrics().leaseTakenOver();
            LOG.info("idempotency lease taken over key={}: the earlier holder's lease expired", ex.key());
        }
        LeaseKeeper.Keeping keeping = keeper.keep(lease, ex.loop());
        StepJournals.Journal journal = journals.open(ex, lease);
        long started = System.nanoTime();
        CompletableFuture<MutableHttpResponse<?>> handled = ex.runHandler(ex.context().plus(journal));
        // back on the request's loop before capturing and settling: the response is written from
        // there anyway, and a store whose connections belong to event loops is called without a hop
        ex.loop().whenComplete(handled, (response, failure) -> {
            if (failure == null) {
                ex.policy().latency().record(System.nanoTime() - started); // for Retry-After (S11)
            }
            // a streamed body's capture completes when its first item is encoded, on that thread
            capture(ex, response, failure).whenComplete((captured, captureFailure) -> {
                try {
                    RequestLoop.relay(settle(ex, new Held(lease, journal), keeping, captured, captureFailure), attempt);
                } catch (RuntimeException | Error e) {
                    keeping.close();
                    attempt.completeExceptionally(e);
                }
            });
        });
    }

    /**
     * @return the handler's response captured for storing (or marked for release), or the
     *     handler's failure, or the capture's own; never thrown
     */
    private CompletableFuture<ResponseCapture.Captured> capture(Exchange ex, MutableHttpResponse<?> response,
                                                                 Throwable failure) {
        if (failure != null) {
            return CompletableFuture.failedFuture(failure);
        }
        try {
            return settlement.releases(ex.request(), response)
                ? CompletableFuture.completedFuture(new ResponseCapture.Captured(response, null, null, false))
                : capture.capture(ex.request(), response);
        } catch (RuntimeException | Error e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Stores or releases the result once it is captured.
     *
     * @return the attempt, complete once the record is settled (for a streamed body: once its
     *     first item may go out, the record being settled when the stream ends)
     */
    private CompletableFuture<Attempt> settle(Exchange ex, Held held, LeaseKeeper.Keeping keeping,
                                              ResponseCapture.Captured captured, Throwable failure) {
        if (failure != null) {
            // the handler (or the encoding of its response) failed: nothing to keep
            keeping.close();
            return held.release().thenApply(v -> {
                throw failure instanceof CompletionException c ? c : new CompletionException(failure);
            });
        }
        report.executed(ex, held.journal.resumed());
        Attempt executed = new Attempt.Executed(captured.response());
        if (captured.stored() == null) {
            keeping.close();
            return held.release().thenApply(v -> executed);
        }
        if (captured.streamed()) {
            captured.stored().whenComplete((stored, streamFailure) -> {
                keeping.close();
                CompletableFuture<Void> settled;
                if (streamFailure != null) {
                    LOG.warn("idempotency streamed response of key={} did not end normally; the key is"
                        + " released: {}", ex.key(), StoreCalls.describe(streamFailure));
                    settled = held.release();
                } else {
                    settled = held.complete(report.traced(ex, stored), ex.policy().retention());
                }
                settled.whenComplete((v, e) -> captured.settled().complete(null));
            });
            if (captured.stored().isDone()) {
                // an empty stream ended before it was sent: answer once it is settled
                return captured.settled().thenApply(v -> executed);
            }
            return CompletableFuture.completedFuture(executed);
        }
        keeping.close();
        CompletableFuture<StoredResponse> stored = captured.stored();
        if (!stored.isDone()) { // a body in memory is captured complete (ResponseCapture.Captured); never waited for
            return stored.thenCompose(s -> held.complete(report.traced(ex, s), ex.policy().retention()))
                .thenApply(v -> executed);
        }
        CompletableFuture<Void> settled = held.complete(report.traced(ex, stored.getNow(null)), ex.policy().retention());
        return settled.isDone() ? CompletableFuture.completedFuture(executed) : settled.thenApply(v -> executed);
    }

    /** The lease of an execution and its steps: settling discards the steps first when they are given up. */
    private final class Held {
        final Lease lease;
        final StepJournals.Journal journal;

        Held(Lease lease, StepJournals.Journal journal) {
            this.lease = lease;
            this.journal = journal;
        }

        CompletableFuture<Void> release() {
            return journal.discards(true)
                ? journal.discard().thenCompose(v -> settlement.release(lease))
                : settlement.release(lease);
        }

        CompletableFuture<Void> complete(StoredResponse stored, Duration retention) {
            return journal.discards(false)
                ? journal.discard().thenCompose(v -> settlement.complete(lease, stored, retention))
                : settlement.complete(lease, stored, retention);
        }
    }
}
