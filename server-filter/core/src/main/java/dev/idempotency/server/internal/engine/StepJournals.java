package dev.idempotency.server.internal.engine;

import dev.idempotency.server.internal.response.Attributes;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.OperationSteps;
import dev.idempotency.server.StepCodec;
import dev.idempotency.server.StepNotRecordedException;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.internal.telemetry.RequestTracing;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.type.Argument;
import io.micronaut.json.JsonMapper;
import io.micronaut.web.router.RouteInfo;
import dev.idempotency.server.store.BoundedExecutor;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * Opens the durable-step journal of each leased execution (CONTRACT S23). A journal costs nothing
 * until the handler runs its first step: then it loads the operation's recorded steps once (one
 * store round trip per execution), and each step that runs costs one more, its record.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class StepJournals {

    /** The first wait before a step's record is tried again; doubled each time, as a completion's. */
    private static final long FIRST_RETRY_MILLIS = 25;

    private final IdempotencyStore store;
    private final StoreCalls calls;
    private final IdempotencyScheduler scheduler;
    private final Report report;
    private final int maxBytes;
    private final JsonMapper mapper;

    /** Threads for the steps of a transactional-mode attempt that are made on an event loop. */
    static final int THREADS = 8;
    /** How many more such calls may wait; past that a step is answered 503. */
    static final int QUEUE = 1_000;

    /**
     * Where a transactional-mode attempt's step calls go when they are made on an event loop (an
     * asynchronous step): a bounded executor of its own, started on first use, so that no event
     * loop waits for the database and a flood is refused rather than queued without end.
     */
    private final BoundedExecutor blocking = new BoundedExecutor("idempotency-steps-", THREADS, QUEUE);

    StepJournals(IdempotencyStore store, StoreCalls calls, IdempotencyScheduler scheduler, Report report,
                 IdempotencyConfiguration config, @Nullable JsonMapper mapper) {
        this.store = store;
        this.calls = calls;
        this.scheduler = scheduler;
        this.report = report;
        this.maxBytes = config.getStepMaxBytes();
        this.mapper = mapper;
    }

    @PreDestroy
    void close() {
        blocking.close();
    }

    /** @return the journal of the execution that holds {@code lease} */
    Journal open(Exchange ex, Lease lease) {
        return new Journal(ex, lease, null);
    }

    /**
     * @return the journal of an attempt in transactional mode (CONTRACT S18): its steps are
     *     recorded beside the attempt's transaction, so that they survive its rollback, while it
     *     runs; a transactional step runs inside it and commits with it
     */
    Journal open(Exchange ex, long fencingToken, TransactionalIdempotencyStore.Transaction holder) {
        return new Journal(ex, new Lease(ex.key(), fencingToken, ex.policy().lease(), ex.context()), holder);
    }

    /** One execution's steps: what it found recorded, what it ran, and whether it gives them up. */
    final class Journal extends OperationSteps {
        private final Exchange ex;
        private final Lease lease;
        /** The attempt's transaction in transactional mode, else {@code null}. */
        @Nullable
        private final TransactionalIdempotencyStore.Transaction holder;
        private final Duration keep;
        /** Steps by name that this execution ran or resumed, as they finish. */
        private final ConcurrentHashMap<String, CompletableFuture<Object>> seen = new ConcurrentHashMap<>();
        private volatile CompletableFuture<Map<String, byte[]>> recorded;
        private volatile boolean resumed;
        private volatile boolean abandoned;

        private Journal(Exchange ex, Lease lease, @Nullable TransactionalIdempotencyStore.Transaction holder) {
            this.ex = ex;
            this.lease = lease;
            this.holder = holder;
            // kept as long as the record could be: its lease, then its retention
            this.keep = ex.policy().retention().plus(ex.policy().lease());
        }

        /** @return whether any step of this execution returned an earlier execution's result */
        boolean resumed() {
            return resumed;
        }

        /** @return whether settling this execution must discard the operation's steps */
        boolean discards(boolean released) {
            return abandoned || (released && !ex.policy().keepSteps() && recorded != null);
        }

        /** Discards the operation's steps, fenced; never fails (a failure is logged: the steps then expire). */
        CompletableFuture<Void> discard() {
            CompletionStage<Boolean> stage;
            try {
                stage = holder != null ? offLoop(() -> holder.discardStepsOutside(lease.key().storeKey()))
                    : store.discardSteps(lease.key().storeKey(), lease.token());
            } catch (UnsupportedOperationException e) {
                return CompletableFuture.completedFuture(null);
            }
            return calls.timed("discardSteps", () -> stage).handle((done, failure) -> {
                if (failure != null) {
                    LOG.warn("idempotency steps of key={} not discarded: {}; they expire with the record", lease.key(),
                        StoreCalls.describe(failure));
                }
                return null;
            });
        }

        @Override
        protected String recordId() {
            return ex.operation().recordId();
        }

        /** @return whether the route is a Kotlin {@code suspend} function or returns a {@code Flow} */
        private boolean kotlinRoute() {
            RouteInfo<?> route = Attributes.route(ex.request());
            return route != null && (route.isSuspended()
                || route.getReturnType().getType().getName().equals("kotlinx.coroutines.flow.Flow"));
        }

        @Override
        protected void abandon() {
            abandoned = true;
        }

        @Override
        protected <T> T runBlocking(String name, StepCodec<T> codec, Class<T> type, boolean repeatable,
                                    boolean transactional, Supplier<T> work) {
            if (ex.loop().inLoop()) {
                throw new IllegalStateException("the durable step '" + name + "' would block an event loop: step(...)"
                    + " waits for the store on the calling thread, so " + (kotlinRoute()
                    ? "in a Kotlin suspend or Flow route (which starts on the event loop even with @ExecuteOn) wrap it in"
                        + " withContext(Dispatchers.IO) { ... }, or use stepAsync(...).await() here"
                    : "call it from a route on a blocking executor (@ExecuteOn(TaskExecutors.BLOCKING)), or use"
                        + " stepAsync(...) here"));
            }
            CompletableFuture<Object> mine = new CompletableFuture<>();
            CompletableFuture<Object> earlier = seen.putIfAbsent(name, mine);
            if (earlier != null) {
                return type.cast(join(repeated(name, repeatable, earlier)));
            }
            RequestTracing.StepSpan span = report.step(ex, name);
            try {
                byte[] found = join(recorded()).get(name);
                T value;
                if (found != null) {
                    value = resume(name, codec, type, found);
                } else if (transactional) {
                    value = join(atomically(name, codec, work));
                    report.metrics().step(false);
                } else {
                    value = work.get();
                    join(record(name, encode(name, codec, value)));
                    report.metrics().step(false);
                }
                mine.complete(value);
                span.end(found != null, null);
                return value;
            } catch (RuntimeException | Error e) {
                forget(name, mine, e);
                span.end(false, e);
                throw e;
            }
        }

        @Override
        protected <T> CompletableFuture<T> runAsync(String name, StepCodec<T> codec, Class<T> type, boolean repeatable,
                                                    boolean transactional, Supplier<? extends CompletionStage<T>> work) {
            CompletableFuture<Object> mine = new CompletableFuture<>();
            CompletableFuture<Object> earlier = seen.putIfAbsent(name, mine);
            if (earlier != null) {
                return repeated(name, repeatable, earlier).thenApply(type::cast);
            }
            PropagatedContext context = PropagatedContext.getOrEmpty();
            RequestLoop loop = ex.loop();
            RequestTracing.StepSpan span = report.step(ex, name);
            boolean[] resumedHere = {false};
            CompletableFuture<T> result = loop.resume(recorded()).thenCompose(steps -> {
                byte[] found = steps.get(name);
                if (found != null) {
                    resumedHere[0] = true;
                    return CompletableFuture.completedFuture(resume(name, codec, type, found));
                }
                if (transactional) {
                    // the island thread waits for the work's stage inside the transaction, as it may;
                    // started in the request's context, which the transaction carries to the island
                    CompletableFuture<T> phase;
                    try (PropagatedContext.Scope ignored = context.propagate()) {
                        phase = atomically(name, codec, () -> join(work.get().toCompletableFuture()));
                    }
                    return loop.resume(phase)
                        .thenApply(value -> {
                            report.metrics().step(false);
                            return value;
                        });
                }
                CompletableFuture<T> ran;
                try (PropagatedContext.Scope ignored = context.propagate()) {
                    ran = work.get().toCompletableFuture();
                }
                return loop.resume(ran).thenCompose(value -> record(name, encode(name, codec, value)).thenApply(v -> {
                    report.metrics().step(false);
                    return value;
                }));
            });
            // completed in the request's context: what the caller chains on it (the next step, say)
            // runs in the execution, as the code before it did,
            CompletableFuture<T> out = new CompletableFuture<>();
            // and on the request's event loop, not on the store client's thread that completed the record
            loop.whenComplete(result, (value, failure) -> {
                try (PropagatedContext.Scope ignored = context.propagate()) {
                    span.end(resumedHere[0], failure);
                    if (failure != null) {
                        forget(name, mine, failure);
                        out.completeExceptionally(failure instanceof CompletionException c && c.getCause() != null
                            ? c.getCause() : failure);
                    } else {
                        mine.complete(value);
                        out.complete(value);
                    }
                }
            });
            return out;
        }

        /**
         * An atomic phase: the work and the step's record in one transaction of the store, on its
         * island, in this thread's propagated context (which {@code inTransaction} carries over).
         */
        private <T> CompletableFuture<T> atomically(String name, StepCodec<T> codec, Supplier<T> work) {
            if (holder != null) {
                // the attempt's own transaction: the work's writes and the step commit with the record
                return offLoop(() -> {
                    T value = work.get();
                    byte[] bytes = encode(name, codec, value);
                    if (!holder.recordStep(lease.key().storeKey(), lease.token(), name, bytes, keep)) {
                        throw new IllegalStateException("the idempotency record vanished inside its own transaction");
                    }
                    return value;
                });
            }
            if (!(store instanceof TransactionalIdempotencyStore transactions)) {
                return CompletableFuture.failedFuture(new IllegalStateException("the durable step '" + name + "' is"
                    + " transactional, which needs a store that keeps records in database transactions (PostgreSQL);"
                    + " this application's is " + store.describe() + ": drop .transactional(), or use the"
                    + " PostgreSQL store"));
            }
            CompletableFuture<T> done = new CompletableFuture<>();
            transactions.inTransaction(tx -> {
                T value = work.get();
                byte[] bytes = encode(name, codec, value);
                boolean recordedNow;
                try {
                    recordedNow = tx.recordStep(lease.key().storeKey(), lease.token(), name, bytes, keep);
                } catch (UnsupportedOperationException e) {
                    throw new IllegalStateException(store.describe() + " cannot record a step inside a transaction: "
                        + e.getMessage(), e);
                }
                if (!recordedNow) {
                    tx.setRollbackOnly();
                    throw new StepNotRecordedException(name, StepNotRecordedException.Reason.LEASE_LOST, "the"
                        + " transactional step '" + name + "' ran, but this execution's lease was taken over before"
                        + " it committed; its transaction was rolled back, and the execution holding the operation"
                        + " now runs the step itself", null);
                }
                return value;
            }).whenComplete((value, failure) -> {
                if (failure == null) {
                    done.complete(value);
                    return;
                }
                Throwable cause = StoreCalls.unwrap(failure);
                if (cause instanceof IdempotencyStoreException) {
                    LOG.error("idempotency transactional step '{}' of key={} did not commit: {}; its writes were rolled"
                        + " back, and the next execution runs it again", name, lease.key(), cause.toString());
                    done.completeExceptionally(new StepNotRecordedException(name,
                        StepNotRecordedException.Reason.STORE_UNAVAILABLE, "the transactional step '" + name + "' did"
                        + " not commit (" + cause.getMessage() + "); its writes were rolled back with its record, and"
                        + " the next execution runs it again", cause));
                } else {
                    done.completeExceptionally(cause);
                }
            });
            return done;
        }

        /**
         * A blocking call of the attempt's transaction (transactional mode): here when this thread
         * may block, else on this bean's bounded executor in this thread's propagated context, so
         * that no event loop waits for the database.
         */
        private <T> CompletableFuture<T> offLoop(Supplier<T> call) {
            if (!ex.loop().inLoop()) {
                try {
                    return CompletableFuture.completedFuture(call.get());
                } catch (UnsupportedOperationException e) {
                    throw e;
                } catch (RuntimeException e) {
                    return CompletableFuture.failedFuture(e);
                }
            }
            PropagatedContext context = PropagatedContext.getOrEmpty();
            CompletableFuture<T> done = new CompletableFuture<>();
            boolean handed = blocking.tryExecute(() -> {
                try (PropagatedContext.Scope ignored = context.propagate()) {
                    done.complete(call.get());
                } catch (RuntimeException | Error e) {
                    done.completeExceptionally(e);
                }
            });
            if (!handed) {
                done.completeExceptionally(new IdempotencyStoreException("idempotency steps saturated: "
                    + blocking.describeSaturation()));
            }
            return done;
        }

        /** A step whose work failed is not recorded: the same execution may run it again. */
        private void forget(String name, CompletableFuture<Object> mine, Throwable failure) {
            seen.remove(name, mine);
            mine.completeExceptionally(failure);
        }

        private CompletableFuture<Object> repeated(String name, boolean repeatable, CompletableFuture<Object> earlier) {
            if (!repeatable) {
                throw new IllegalStateException("the durable step '" + name + "' ran already in this execution: give"
                    + " each step a name of its own, or say .repeatable() where the repeat is meant (it then gets"
                    + " the first run's result)");
            }
            return earlier;
        }

        private <T> T resume(String name, StepCodec<T> codec, Class<T> type, byte[] found) {
            T value = decode(name, codec, type, found);
            resumed = true;
            report.metrics().step(true);
            return value;
        }

        /** @return the operation's recorded steps, loaded once per execution */
        private CompletableFuture<Map<String, byte[]>> recorded() {
            CompletableFuture<Map<String, byte[]>> loaded = recorded;
            if (loaded == null) {
                synchronized (this) {
                    loaded = recorded;
                    if (loaded == null) {
                        loaded = load();
                        recorded = loaded;
                    }
                }
            }
            return loaded;
        }

        private CompletableFuture<Map<String, byte[]>> load() {
            CompletionStage<Map<String, byte[]>> stage;
            try {
                stage = store.steps(lease.key().storeKey());
            } catch (UnsupportedOperationException e) {
                return CompletableFuture.failedFuture(new IllegalStateException(e.getMessage(), e));
            }
            CompletableFuture<Map<String, byte[]>> loaded = new CompletableFuture<>();
            calls.timed("steps", () -> stage).whenComplete((steps, failure) -> {
                if (failure == null) {
                    loaded.complete(steps);
                    return;
                }
                recorded = null; // the next step asks the store again
                loaded.completeExceptionally(new StepNotRecordedException("(any)",
                    StepNotRecordedException.Reason.STORE_UNAVAILABLE, "the durable steps of this operation could not be"
                    + " read (" + StoreCalls.describe(failure) + "); no step ran, retry the request",
                    StoreCalls.unwrap(failure)));
            });
            return loaded;
        }

        /**
         * Records a step's result, retried with backoff while the store fails, for up to half the
         * lease (a completion's rule); fenced off when the lease was taken over.
         */
        private CompletableFuture<Void> record(String name, byte[] result) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            tryRecord(name, result, FIRST_RETRY_MILLIS, System.nanoTime() + lease.duration().toNanos() / 2, done);
            return done;
        }

        private void tryRecord(String name, byte[] result, long delayMillis, long giveUpAt, CompletableFuture<Void> done) {
            CompletionStage<Boolean> stage;
            try {
                stage = holder != null ? offLoop(() -> holder.recordStepOutside(lease.key().storeKey(), name, result, keep))
                    : store.recordStep(lease.key().storeKey(), lease.token(), name, result, keep);
            } catch (UnsupportedOperationException e) {
                done.completeExceptionally(new IllegalStateException(e.getMessage(), e));
                return;
            }
            calls.timed("recordStep", () -> stage).whenComplete((recordedNow, failure) -> {
                if (failure == null) {
                    if (recordedNow) {
                        done.complete(null);
                    } else {
                        done.completeExceptionally(new StepNotRecordedException(name,
                            StepNotRecordedException.Reason.LEASE_LOST, "the durable step '" + name + "' ran, but"
                            + " this execution no longer held the operation when its result was to be recorded (its"
                            + " lease was taken over, or its transaction ended); the execution holding the operation"
                            + " now runs the step itself", null));
                    }
                    return;
                }
                boolean late = holder != null // the attempt waits on its transaction: answer now, no retries
                    || System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis) >= giveUpAt;
                IdempotencyScheduler.Cancellable retry = late ? null
                    : scheduler.schedule(() -> tryRecord(name, result, delayMillis * 2, giveUpAt, done), delayMillis,
                        TimeUnit.MILLISECONDS);
                if (retry == null) {
                    LOG.error("idempotency step '{}' of key={} ran but was not recorded: {}; the next execution runs"
                        + " it again", name, lease.key(), StoreCalls.describe(failure));
                    done.completeExceptionally(new StepNotRecordedException(name,
                        StepNotRecordedException.Reason.STORE_UNAVAILABLE, "the durable step '" + name + "' ran, but"
                        + " the store did not record its result (" + StoreCalls.describe(failure) + "); the next"
                        + " execution runs it again", StoreCalls.unwrap(failure)));
                }
            });
        }

        private <T> byte[] encode(String name, StepCodec<T> codec, T value) {
            byte[] bytes;
            try {
                bytes = codec != null ? codec.encode(value) : mapper().writeValueAsBytes(value);
            } catch (IOException e) {
                throw new IllegalArgumentException("the result of the durable step '" + name + "' cannot be written"
                    + " as JSON (" + e.getMessage() + "): make its type serializable (@Serdeable), or name a"
                    + " StepCodec", e);
            }
            if (bytes.length > maxBytes) {
                throw new StepNotRecordedException(name, StepNotRecordedException.Reason.TOO_LARGE,
                    "the result of the durable step '" + name + "' has " + bytes.length + " bytes encoded, more than the"
                    + " bound of " + maxBytes + " (idempotency.step-max-bytes): record less (an id rather than the"
                    + " whole object), or raise the bound; nothing was recorded, so the next execution runs the"
                    + " step again", null);
            }
            return bytes;
        }

        private <T> T decode(String name, StepCodec<T> codec, Class<T> type, byte[] bytes) {
            try {
                return codec != null ? codec.decode(bytes) : mapper().readValue(bytes, Argument.of(type));
            } catch (IOException e) {
                throw new IllegalStateException("the recorded result of the durable step '" + name + "' cannot be read"
                    + " as " + type.getName() + " (" + e.getMessage() + "): did the step's type change since it was"
                    + " recorded? Name the step anew, or abandon() the operation", e);
            }
        }

        private JsonMapper mapper() {
            if (mapper == null) {
                throw new IllegalStateException("durable steps keep their results with the application's JsonMapper,"
                    + " and none is present: add micronaut-serde-jackson (or another JSON module), or name a"
                    + " StepCodec");
            }
            return mapper;
        }
    }

    /** @return {@code stage}'s value on this thread, its failure rethrown as it was */
    private static <T> T join(CompletableFuture<T> stage) {
        try {
            return stage.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
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
