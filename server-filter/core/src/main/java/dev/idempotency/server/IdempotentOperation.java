package dev.idempotency.server;

import dev.idempotency.context.OperationContext;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.propagation.PropagatedContextElement;
import io.micronaut.http.HttpRequest;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The idempotency identity of the operation a request under the filter performs (CONTRACT M1):
 * the client's {@code Idempotency-Key}, the scope it was taken in, and the id of its record.
 * The same operation retried with the same key has the same identity, on any instance.
 *
 * <p>Code running under the filter reads it without parsing headers, on blocking and reactive
 * routes alike: as a controller argument of this type, or with {@link #current()} (the filter
 * puts it into Micronaut's propagated context before the route runs, so it follows the request
 * to the route's executor). Outside an operation there is none: a route without
 * {@link Idempotent}, a request without a key on a route where it is optional, or a
 * {@code failOpen} route whose store was down.
 *
 * <p>{@link #step(String, Class, Supplier)} runs a durable step: work that runs at most once to
 * completion per operation, its result recorded with the operation's record and handed to every
 * later execution of the operation instead of running again (CONTRACT S23).
 *
 * <p>{@link #messageId(String)} derives the id of a message the operation publishes (CONTRACT
 * M2): the same step of the same operation always gets the same id, so a retry publishes the
 * same ids again and consumers see the duplicates for what they are.
 *
 * @param key      the client's key, parsed (the value of the sf-string); show it in traces and
 *                 message headers, never use it as a storage key
 * @param scope    who performed the operation and on which route, e.g.
 *                 {@code principal:alice POST /payments}; keys never cross scopes
 * @param recordId the id of the operation's record: 64 hex digits of SHA-256 over the scope and
 *                 the key, the key the store files it under
 */
public record IdempotentOperation(String key, String scope, String recordId) implements PropagatedContextElement {

    /** The request attribute the filter sets for the duration of the request. */
    public static final String ATTRIBUTE = "dev.idempotency.operation";

    private static final int MAX_STEP_NAME = 200;

    public IdempotentOperation {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(recordId, "recordId");
    }

    /** @return the operation of the request in scope on this thread, if it runs under the filter */
    public static Optional<IdempotentOperation> current() {
        return PropagatedContext.find().flatMap(c -> c.find(IdempotentOperation.class));
    }

    /** @return the operation {@code request} performs, if it runs under the filter */
    public static Optional<IdempotentOperation> of(HttpRequest<?> request) {
        return request.getAttribute(ATTRIBUTE, IdempotentOperation.class);
    }

    /**
     * The id of the message this operation publishes for {@code step} (CONTRACT M2): a name-based
     * UUID (version 8, RFC 9562) of SHA-256 over the record id and the step. Deterministic: the
     * same operation and step give the same id on every attempt and every instance; two steps, or
     * two operations, give two ids. The function is the one the client SDK derives the keys of
     * downstream calls with (CONTRACT C11, {@link OperationContext}), under another tag.
     *
     * @param step a name for the message within the operation, e.g. {@code payment.initiated};
     *             1 to 200 characters, not blank
     * @return the message id, e.g. {@code 3b0e9a1c-52f4-8d0e-9a6b-0c4f51e2d7a8}
     */
    public String messageId(String step) {
        return OperationContext.messageId(recordId, step);
    }

    /**
     * The operation in scope on this thread, for code that must run under one.
     *
     * @return {@link #current()}'s operation
     * @throws IllegalStateException when no operation is in scope, saying where one is
     */
    public static IdempotentOperation required() {
        return current().orElseThrow(() -> new IllegalStateException("no idempotent operation is in scope here:"
            + " operations exist in code that a request under the filter runs (a route annotated @Idempotent,"
            + " called with an Idempotency-Key); on another thread, propagate Micronaut's PropagatedContext there"));
    }

    /**
     * Runs a durable step (CONTRACT S23): {@code work} runs at most once to completion per
     * operation. Its result is recorded with the operation's record, and every later execution
     * of the same operation (a retry after a released 5xx, a takeover after a crash or an expired
     * lease) gets the recorded result back without running {@code work}. The result is encoded
     * with the application's JSON mapper, bounded by {@code idempotency.steps.max-bytes}, kept
     * for the route's retention and lease, and fenced like a completion.
     *
     * <p>Blocking: it waits for the store's answers on the calling thread, so call it from a route
     * on a blocking executor ({@code @ExecuteOn(TaskExecutors.BLOCKING)}); on an event loop use
     * {@link #stepAsync} (the blocking form called on the request's event loop throws
     * {@link IllegalStateException} saying so, before it runs anything).
     *
     * <p>What can still run twice: work whose effect happened but whose record was not written
     * (the process died between the two, or {@link StepNotRecordedException} was thrown). Make
     * such work idempotent downstream too: a call through the client SDK sends a derived key
     * (C11), so the downstream answers the repeat with a replay.
     *
     * @param name the step's name, unique within the operation: 1 to 200 characters
     * @param type the result's type, for the JSON mapper
     * @param work the step's work; its exception fails the step (nothing is recorded) and is
     *             rethrown
     * @param <T>  the result type
     * @return the work's result, or the one an earlier execution recorded
     * @throws StepNotRecordedException when the work ran but its result could not be recorded
     * @throws IllegalStateException    when this is not the operation of the execution in scope,
     *                                  the name was used already in this execution, or the store
     *                                  does not record steps
     */
    public <T> T step(String name, Class<T> type, Supplier<T> work) {
        return step(name, type).run(work);
    }

    /**
     * {@link #step(String, Class, Supplier)} without blocking: the store's answers and the work's
     * stage are awaited by callbacks.
     *
     * @param name the step's name, unique within the operation: 1 to 200 characters
     * @param type the result's type, for the JSON mapper
     * @param work starts the step's work; its stage's failure fails the step
     * @param <T>  the result type
     * @return the work's result, or the one an earlier execution recorded; failed as the
     *     blocking form throws
     */
    public <T> CompletionStage<T> stepAsync(String name, Class<T> type, Supplier<? extends CompletionStage<T>> work) {
        return step(name, type).runAsync(work);
    }

    /**
     * A durable step to configure before running it: another codec, or a repeat that is meant.
     *
     * @param name the step's name, unique within the operation: 1 to 200 characters
     * @param type the result's type
     * @param <T>  the result type
     * @return the step, not yet run
     */
    public <T> Step<T> step(String name, Class<T> type) {
        return new Step<>(this, checkStep(name), Objects.requireNonNull(type, "type"), null, false, false);
    }

    /**
     * Gives up on this operation's recorded steps: when this execution settles (whatever its
     * response), they are discarded, so the next execution runs every step again. For an
     * execution that learns that its earlier steps must not be reused, e.g. a charge that the
     * gateway has since refunded.
     *
     * @throws IllegalStateException when this is not the operation of the execution in scope
     */
    public void abandon() {
        steps().abandon();
    }

    private OperationSteps steps() {
        OperationSteps steps = PropagatedContext.find().flatMap(c -> c.find(OperationSteps.class)).orElse(null);
        if (steps == null || !steps.recordId().equals(recordId)) {
            throw new IllegalStateException("durable steps run only inside an execution of their operation: call"
                + " step(...) from code that the request under the filter runs (its propagated context holds the"
                + " execution); this thread has " + (steps == null ? "none" : "another operation's"));
        }
        return steps;
    }

    private static String checkStep(String name) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a durable step needs a name: 1 to 200 characters, unique within the"
                + " operation, e.g. \"charge-card\"; was " + (name == null ? "null" : "blank"));
        }
        if (name.length() > MAX_STEP_NAME) {
            throw new IllegalArgumentException("a durable step's name has at most " + MAX_STEP_NAME
                + " characters, this one has " + name.length() + ": shorten it");
        }
        return name;
    }

    /**
     * A durable step of an operation, configured but not run; immutable, each method returns a
     * new one. See {@link IdempotentOperation#step(String, Class, Supplier)} for what running it
     * guarantees.
     *
     * @param <T> the result type
     */
    public static final class Step<T> {
        private final IdempotentOperation operation;
        private final String name;
        private final Class<T> type;
        private final StepCodec<T> codec;
        private final boolean repeatable;
        private final boolean transactional;

        private Step(IdempotentOperation operation, String name, Class<T> type, StepCodec<T> codec, boolean repeatable,
                     boolean transactional) {
            this.operation = operation;
            this.name = name;
            this.type = type;
            this.codec = codec;
            this.repeatable = repeatable;
            this.transactional = transactional;
        }

        /**
         * @param codec how the result is kept, instead of the application's JSON mapper
         * @return a copy with the codec
         */
        public Step<T> codec(StepCodec<T> codec) {
            return new Step<>(operation, name, type, Objects.requireNonNull(codec, "codec"), repeatable, transactional);
        }

        /**
         * Says that running this step's name again in the same execution is meant: the repeat
         * gets the first run's result (by default a repeat is an error, since two different
         * steps given one name would share one result).
         *
         * @return a copy that may repeat
         */
        public Step<T> repeatable() {
            return new Step<>(operation, name, type, codec, true, transactional);
        }

        /**
         * Makes the step an atomic phase (PostgreSQL): its work runs in one database transaction
         * of the store, together with the step's record. The work's writes through the
         * application's {@code DataSource} (Micronaut Data, {@code @Transactional} with the
         * default propagation, JDBC on the application's bean) commit with the record, or roll
         * back with it, so the step's database effect and its record never disagree. The work
         * runs on the store's transactional island, in the request's propagated context; a step
         * whose transaction fails is not retried (its work would run again), and is answered like
         * a store that cannot record. Needs a {@link dev.idempotency.server.store.TransactionalIdempotencyStore}.
         *
         * @return a copy that runs in one transaction with its record
         */
        public Step<T> transactional() {
            return new Step<>(operation, name, type, codec, repeatable, true);
        }

        /**
         * Runs the step, blocking the calling thread for the store's answers.
         *
         * @param work the step's work
         * @return its result, or the recorded one
         */
        public T run(Supplier<T> work) {
            Objects.requireNonNull(work, "work");
            return operation.steps().runBlocking(name, codec, type, repeatable, transactional, work);
        }

        /**
         * Runs the step without blocking.
         *
         * @param work starts the step's work
         * @return its result, or the recorded one
         */
        public CompletionStage<T> runAsync(Supplier<? extends CompletionStage<T>> work) {
            Objects.requireNonNull(work, "work");
            try {
                return operation.steps().runAsync(name, codec, type, repeatable, transactional, work);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
    }

    @Override
    public String toString() {
        // the key is the client's; the record id's prefix names the operation in logs
        return "IdempotentOperation[" + scope + ", record " + recordId.substring(0, Math.min(12, recordId.length())) + "]";
    }
}
