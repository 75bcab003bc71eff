package dev.idempotency.server.internal.engine;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.IdempotencyOutcome;
import dev.idempotency.server.internal.response.ResponseCapture;
import dev.idempotency.server.internal.response.Responses;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.internal.runtime.StoreCircuit;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.MutableHttpResponse;
import jakarta.inject.Singleton;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * Transactional mode (CONTRACT S18): each attempt is one store transaction holding acquire, the
 * handler and the completion, so the record and the handler's writes commit or roll back
 * together.
 *
 * <p>This is the filter's one blocking island, by necessity: a JDBC transaction is bound to a
 * thread, so the whole attempt runs on the store's transactional executor (see
 * {@link TransactionalIdempotencyStore}), which waits there for the handler. The handler joins
 * the transaction because the continuation is called on that thread, inside it: Micronaut then
 * runs the route (with its repositories and {@code @Transactional} methods) in the propagated
 * context that holds the transaction's connection, on whatever executor the route asked for. No
 * lease is kept: the uncommitted record is invisible to other connections. A failed handler is
 * rolled back (the transactional release); a failed commit is answered 503, since nothing was
 * kept. A streamed response is collected in full before the commit.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class TransactionalMode implements ExecutionMode {

    private final IdempotencyStore store;
    private final ResponseCapture capture;
    private final Settlement settlement;
    private final Responses responses;
    private final Report report;
    private final StoreCircuit circuit;

    private final StepJournals journals;

    TransactionalMode(IdempotencyStore store, ResponseCapture capture, Settlement settlement, Responses responses,
                      Report report, StoreCircuit circuit, StepJournals journals) {
        this.journals = journals;
        this.circuit = circuit;
        this.store = store;
        this.capture = capture;
        this.settlement = settlement;
        this.responses = responses;
        this.report = report;
    }

    @Override
    public CompletionStage<Attempt> attempt(Exchange ex) {
        TransactionalIdempotencyStore txStore = (TransactionalIdempotencyStore) store; // checked at startup
        if (!circuit.admit()) {
            return CompletableFuture.completedFuture(new Attempt.StoreFailed(new StoreCalls.CircuitOpen()));
        }
        InTransaction attempt = new InTransaction(ex);
        CompletableFuture<InTransaction> done;
        // the store opens its transaction in the context current here, so the route sees the request's
        // propagated context (tracing, MDC) plus the transaction
        try (PropagatedContext.Scope ignored = ex.context().propagate()) {
            done = txStore.inTransaction(attempt::run).toCompletableFuture();
        } catch (RuntimeException e) {
            done = CompletableFuture.failedFuture(e);
        }
        return ex.loop().resume(done).handle((ignored, failure) -> {
            if (failure != null) {
                Throwable t = StoreCalls.unwrap(failure);
                if (!(t instanceof IdempotencyStoreException storeFailure)) {
                    circuit.succeeded(); // the store answered; the handler failed
                    throw failure instanceof CompletionException c ? c : new CompletionException(failure);
                }
                circuit.failed(storeFailure);
                if (!attempt.handlerRan) {
                    return new Attempt.StoreFailed(storeFailure);
                }
                report.outcome(IdempotencyOutcome.STORE_ERROR, ex);
                LOG.error("idempotency transaction failed after the handler ran key={}: its writes and the record"
                    + " were rolled back; answering 503", ex.key(), storeFailure);
                return new Attempt.Executed(responses.storeUnavailable());
            }
            circuit.succeeded();
            if (attempt.response != null) {
                if (attempt.takeover) {
                    report.metrics().leaseTakenOver();
                }
                report.executed(ex, attempt.journal != null && attempt.journal.resumed());
                return new Attempt.Executed(attempt.response);
            }
            return new Attempt.NotAcquired(attempt.result);
        });
    }

    /** One attempt, run on the store's transactional island; its fields are read after the transaction ended. */
    private final class InTransaction {
        private final Exchange ex;
        volatile boolean handlerRan;
        volatile boolean takeover;
        @Nullable
        volatile StepJournals.Journal journal;
        @Nullable
        volatile MutableHttpResponse<?> response;
        @Nullable
        volatile AcquireResult result;

        InTransaction(Exchange ex) {
            this.ex = ex;
        }

        InTransaction run(TransactionalIdempotencyStore.Transaction tx) {
            AcquireResult acquired = timed("acquire", () -> tx.acquire(ex.key().storeKey(), ex.fingerprint(),
                ex.policy().lease()));
            if (!(acquired instanceof AcquireResult.Acquired a)) {
                tx.setRollbackOnly(); // nothing of ours to keep
                result = acquired;
                return this;
            }
            takeover = a.takeover();
            handlerRan = true;
            // in the context in scope here: the request's, plus the transaction
            // with the attempt's durable steps, recorded beside its transaction so that a rollback keeps them
            StepJournals.Journal journal = journals.open(ex, a.fencingToken(), tx);
            this.journal = journal;
            long started = System.nanoTime();
            MutableHttpResponse<?> handled;
            try {
                handled = join(ex.runHandler(PropagatedContext.getOrEmpty().plus(journal)));
            } catch (RuntimeException | Error e) {
                discardIfGivenUp(journal, true);
                throw e;
            }
            ex.policy().latency().record(System.nanoTime() - started);
            response = handled;
            if (settlement.releases(ex.request(), handled)) {
                tx.setRollbackOnly();
                discardIfGivenUp(journal, true);
                return this;
            }
            discardIfGivenUp(journal, false);
            if (tx.isRollbackOnly()) {
                // e.g. a @Transactional method of the handler threw and its exception was handled into this
                // response: its writes cannot commit, so neither can the record
                LOG.warn("idempotency transaction of key={} was marked rollback-only by the handler; its {} response"
                    + " is sent but not stored", ex.key(), handled.code());
                return this;
            }
            ResponseCapture.Captured captured = join(capture.captureWhole(ex.request(), handled));
            response = captured.response();
            StoredResponse stored = report.traced(ex, captured.stored().join());
            boolean completed = timed("complete", () -> tx.complete(ex.key().storeKey(), a.fencingToken(), stored,
                ex.policy().retention()));
            if (!completed) {
                // cannot happen while this transaction holds the record; never commit without it
                tx.setRollbackOnly();
                throw new IdempotencyStoreException("the idempotency record vanished inside its own transaction");
            }
            return this;
        }

        /** Discards the steps, while the transaction still runs, when the attempt gave them up (abandon, keepSteps). */
        private void discardIfGivenUp(StepJournals.Journal journal, boolean released) {
            if (journal.discards(released)) {
                journal.discard().join(); // never fails: a failure is logged and the steps expire
            }
        }

        private <T> T timed(String operation, Supplier<T> call) {
            long start = System.nanoTime();
            try {
                T value = call.get();
                report.metrics().storeLatency(operation, System.nanoTime() - start, false);
                return value;
            } catch (RuntimeException e) {
                report.metrics().storeLatency(operation, System.nanoTime() - start, true);
                throw e;
            }
        }
    }

    /** Waits on the island thread; the cause of a failure is rethrown as it is. */
    private static <T> T join(CompletableFuture<T> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            Throwable cause = StoreCalls.unwrap(e);
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }
}
