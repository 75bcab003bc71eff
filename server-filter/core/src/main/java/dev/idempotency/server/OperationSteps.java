package dev.idempotency.server;

import io.micronaut.core.annotation.Internal;
import io.micronaut.core.propagation.PropagatedContextElement;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The durable steps of one execution of an operation (CONTRACT S23): what
 * {@link IdempotentOperation#step} reaches through the propagated context, where the filter puts
 * one beside the operation before each run of its handler. Implemented by the filter's engine;
 * not for applications.
 */
@Internal
public abstract class OperationSteps implements PropagatedContextElement {

    /** @return the record id of the operation this execution runs */
    protected abstract String recordId();

    /**
     * Runs step {@code name} at most once to completion per operation, on the calling thread,
     * which waits for the store.
     *
     * @param name       the step's name, validated
     * @param codec      its result's codec, or {@code null} for the JSON mapper with {@code type}
     * @param type       the result type, for the JSON mapper
     * @param repeatable whether a second use of the name in this execution is meant (it gets the
     *                   first one's result)
     * @param transactional whether the work and the step's record run in one database
     *                   transaction of the store (an atomic phase)
     * @param work       the step's work, run on the calling thread (on the store's transactional
     *                   island, in this thread's propagated context, when transactional)
     * @param <T>        the result type
     * @return its result: recorded now, or by an earlier execution
     */
    protected abstract <T> T runBlocking(String name, StepCodec<T> codec, Class<T> type, boolean repeatable,
                                         boolean transactional, Supplier<T> work);

    /**
     * {@link #runBlocking} by callbacks: {@code work} starts in the request's propagated context.
     *
     * @return its result: recorded now, or by an earlier execution
     */
    protected abstract <T> CompletableFuture<T> runAsync(String name, StepCodec<T> codec, Class<T> type,
                                                         boolean repeatable, boolean transactional,
                                                         Supplier<? extends CompletionStage<T>> work);

    /** Discards the operation's steps when this execution settles: the next one runs every step again. */
    protected abstract void abandon();
}
