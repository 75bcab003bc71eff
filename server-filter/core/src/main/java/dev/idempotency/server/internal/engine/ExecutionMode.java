package dev.idempotency.server.internal.engine;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.http.MutableHttpResponse;

import java.util.concurrent.CompletionStage;

/**
 * How one attempt at a request's record runs (CONTRACT S10, S12, S18): acquire the record and,
 * if this request got it, run the handler and settle the result. {@link Coordinator} makes the
 * attempts and answers what they did not execute; the modes differ only in how a held record is
 * protected: a lease kept alive while the handler runs ({@link LeasedMode}), or one database
 * transaction around acquire, handler and completion ({@link TransactionalMode}).
 */
interface ExecutionMode {

    /**
     * @return what the attempt did; never fails for store trouble (that is
     *     {@link Attempt.StoreFailed}), only with the handler's own failure
     */
    CompletionStage<Attempt> attempt(Exchange exchange);

    /** What one attempt did. */
    sealed interface Attempt {

        /** This request held the record and ran the handler; {@code response} goes to the client. */
        record Executed(MutableHttpResponse<?> response) implements Attempt {
        }

        /** Another request holds or held the record: the coordinator answers {@code result}. */
        record NotAcquired(AcquireResult result) implements Attempt {
        }

        /** The store could not answer before the handler ran. */
        record StoreFailed(IdempotencyStoreException failure) implements Attempt {
        }
    }
}
