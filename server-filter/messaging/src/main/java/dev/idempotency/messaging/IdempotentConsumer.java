package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.ConsumerTracing;
import dev.idempotency.messaging.internal.MessagingMetrics;
import dev.idempotency.messaging.internal.TraceContext;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Processes each message once (CONTRACT M4, M5), on any {@link IdempotencyStore}: the message id
 * is acquired like an {@code Idempotency-Key}, in the consumer's own scope.
 * <ul>
 *   <li>Acquired: the handler runs (its hold on the id renewed while it runs); when it succeeds
 *       the outcome is stored, and only then is the delivery acknowledged. When it fails, the id
 *       is released and the message comes back after {@code retry-delay}, doubled after each
 *       further failure up to {@code retry-delay-max}, until
 *       {@code max-attempts} failures, then it is dead-lettered with the failure as reason.</li>
 *   <li>Processed before: acknowledged at once, the handler does not run (a duplicate).</li>
 *   <li>Being processed elsewhere, or the store did not answer: the message comes back after
 *       {@code in-progress-delay}, not counted as a failure. Never dropped: if the holder crashed,
 *       its hold runs out with its lease and a later delivery runs the handler.</li>
 *   <li>The same id with another body: dead-lettered (an id reused for another message is a
 *       publisher's bug, and running it would lose one of them silently).</li>
 * </ul>
 * In transactional mode (PostgreSQL) acquire, the handler and the stored outcome are one
 * database transaction (the inbox): a failure or a crash rolls all of them back.
 *
 * <p>Where it can still run twice: a handler that succeeded but whose outcome the store could
 * not record (after three tries) leaves the id held until its lease ends; the redelivery after
 * that runs it again. Give the handler's external effects their own idempotency (the outbox, or
 * an {@code Idempotency-Key} built from the message id) where that matters.
 *
 * <p>Thread-safe; never blocks the calling thread (the broker client's), except the
 * transactional handler, which runs on the store's transactional thread.
 */
public final class IdempotentConsumer {

    private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);
    private static final StoredResponse PROCESSED = new StoredResponse(200, Map.of(), new byte[0], false);
    private static final byte[] SCOPE_TAG = "idempotency-consumer/v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte FINGERPRINT_VERSION = 1;
    private static final int COMPLETION_TRIES = 3;

    private final ConsumerSettings settings;
    private final IdempotencyStore store;
    private final ScheduledExecutorService timer;
    private final MessagingMetrics metrics;
    private final ConsumerTracing tracing;

    IdempotentConsumer(ConsumerSettings settings, IdempotencyStore store, ScheduledExecutorService timer,
                       MessagingMetrics metrics) {
        this(settings, store, timer, metrics, null);
    }

    /** @param tracing the delivery spans (CONTRACT O4), or {@code null} without OpenTelemetry */
    IdempotentConsumer(ConsumerSettings settings, IdempotencyStore store, ScheduledExecutorService timer,
                       MessagingMetrics metrics, ConsumerTracing tracing) {
        this.settings = settings;
        this.store = store;
        this.timer = timer;
        this.metrics = metrics;
        this.tracing = tracing;
        if (settings.transactional() && !(store instanceof TransactionalIdempotencyStore)) {
            throw new IllegalStateException("consumer '" + settings.name() + "' is transactional, but the idempotency"
                + " store (" + store.getClass().getSimpleName() + ") has no transactions: use the PostgreSQL store, or"
                + " make the consumer non-transactional");
        }
    }

    /** @return the consumer's settings */
    public ConsumerSettings settings() {
        return settings;
    }

    /**
     * The record key a message id has in this consumer's scope: 64 hex digits of SHA-256 over
     * the consumer's name and the id.
     */
    public String recordKey(String messageId) {
        MessageDigest sha = sha256();
        sha.update(SCOPE_TAG);
        field(sha, settings.name());
        field(sha, messageId);
        return HexFormat.of().formatHex(sha.digest());
    }

    /**
     * Processes one delivery with {@code handler}.
     *
     * @return what to do with the delivery; never fails
     */
    public CompletionStage<Disposition> process(ReceivedMessage message, MessageHandler handler) {
        if (settings.transactional()) {
            throw new IllegalStateException("consumer '" + settings.name() + "' is transactional: give it a"
                + " TransactionalMessageHandler");
        }
        String key = recordKey(message.messageId());
        byte[] fingerprint = fingerprint(message);
        ConsumerTracing.DeliverySpan span = span(message, key);
        CompletableFuture<AcquireResult> acquired;
        try {
            acquired = store.acquire(key, fingerprint, settings.lease()).toCompletableFuture();
        } catch (RuntimeException e) {
            acquired = CompletableFuture.failedFuture(e);
        }
        return acquired.handle((result, failure) -> {
            if (failure != null) {
                return done(notAnswered(message, failure));
            }
            if (result instanceof AcquireResult.Acquired a) {
                return run(message, handler, key, a.fencingToken(), span);
            }
            return done(answer(message, result));
        }).thenCompose(d -> d).thenApply(d -> counted(d, span));
    }

    /**
     * Processes one delivery with a handler that joins the store's transaction (the inbox).
     *
     * @return what to do with the delivery, once the transaction ended; never fails
     */
    public CompletionStage<Disposition> process(ReceivedMessage message, TransactionalMessageHandler handler) {
        if (!settings.transactional()) {
            throw new IllegalStateException("consumer '" + settings.name() + "' is not transactional: give it a"
                + " MessageHandler, or make it transactional");
        }
        String key = recordKey(message.messageId());
        byte[] fingerprint = fingerprint(message);
        TransactionalIdempotencyStore tx = (TransactionalIdempotencyStore) store;
        ConsumerTracing.DeliverySpan span = span(message, key);
        CompletableFuture<Disposition> done;
        try {
            done = tx.inTransaction(t -> {
                AcquireResult result = t.acquire(key, fingerprint, settings.lease());
                if (!(result instanceof AcquireResult.Acquired a)) {
                    t.setRollbackOnly();
                    return answer(message, result);
                }
                try (MDC.MDCCloseable trace = traced(message); ConsumerTracing.Current current = span.current()) {
                    handler.handle(message);
                } catch (RuntimeException e) {
                    throw new HandlerFailure(e);
                }
                if (t.isRollbackOnly()) {
                    throw new HandlerFailure(new IllegalStateException("the handler's transaction was marked rollback-only"));
                }
                if (!t.complete(key, a.fencingToken(), PROCESSED, settings.retention())) {
                    t.setRollbackOnly();
                    throw new IdempotencyStoreException("the consumer's record vanished inside its own transaction");
                }
                return (Disposition) new Disposition.Ack(DeliveryOutcome.PROCESSED);
            }).toCompletableFuture();
        } catch (RuntimeException e) {
            done = CompletableFuture.failedFuture(e);
        }
        return done.handle((d, failure) -> {
            if (failure == null) {
                return d;
            }
            Throwable cause = unwrap(failure);
            if (cause instanceof HandlerFailure h) {
                span.handlerFailed(h.getCause());
                return failed(message, h.getCause());
            }
            return notAnswered(message, cause);
        }).thenApply(d -> counted(d, span));
    }

    private CompletableFuture<Disposition> run(ReceivedMessage message, MessageHandler handler, String key, long token,
                                               ConsumerTracing.DeliverySpan span) {
        long period = Math.max(1, settings.lease().toMillis() / 3);
        ScheduledFuture<?> renewal = timer.scheduleAtFixedRate(() -> renew(key, token), period, period,
            TimeUnit.MILLISECONDS);
        CompletableFuture<Void> handled;
        try (MDC.MDCCloseable trace = traced(message); ConsumerTracing.Current current = span.current()) {
            handled = handler.handle(message).toCompletableFuture();
        } catch (RuntimeException e) {
            handled = CompletableFuture.failedFuture(e);
        }
        return handled.handle((v, failure) -> {
            renewal.cancel(false);
            if (failure == null) {
                return storeOutcome(message, key, token, 1);
            }
            Throwable cause = unwrap(failure);
            span.handlerFailed(cause);
            CompletableFuture<Boolean> released;
            try {
                released = store.release(key, token).toCompletableFuture();
            } catch (RuntimeException e) {
                released = CompletableFuture.failedFuture(e);
            }
            // released or not (a store that is down lets the hold run out with its lease), the message comes back
            return released.handle((r, f) -> failed(message, cause));
        }).thenCompose(d -> d);
    }

    /**
     * Puts the publishing request's {@code traceparent} in the MDC while the handler is called
     * (CONTRACT M11), so its log lines carry the trace; {@code null} (nothing to close) without one.
     */
    private static MDC.MDCCloseable traced(ReceivedMessage message) {
        return message.traceparent().map(tp -> MDC.putCloseable(TraceContext.TRACEPARENT, tp)).orElse(null);
    }

    private void renew(String key, long token) {
        try {
            store.renew(key, token, settings.lease()).whenComplete((renewed, failure) -> {
                if (failure != null) {
                    LOG.warn("idempotency consumer '{}': renewing the hold of {} failed: {}", settings.name(),
                        key.substring(0, 12), unwrap(failure).toString());
                } else if (!renewed) {
                    LOG.warn("idempotency consumer '{}': the hold of {} was lost (taken over after its lease ran out)",
                        settings.name(), key.substring(0, 12));
                }
            });
        } catch (RuntimeException e) {
            LOG.warn("idempotency consumer '{}': renewing failed: {}", settings.name(), e.toString());
        }
    }

    /** Stores the outcome (three tries), then acknowledges; never acknowledges what was not stored. */
    private CompletableFuture<Disposition> storeOutcome(ReceivedMessage message, String key, long token, int tryNo) {
        CompletableFuture<Boolean> completed;
        try {
            completed = store.complete(key, token, PROCESSED, settings.retention()).toCompletableFuture();
        } catch (RuntimeException e) {
            completed = CompletableFuture.failedFuture(e);
        }
        return completed.handle((stored, failure) -> {
            if (failure == null) {
                if (!stored) {
                    LOG.warn("idempotency consumer '{}': message {} was processed, but its hold had been taken over"
                        + " (the handler outlived its lease): it may have run twice", settings.name(), message.messageId());
                }
                return done((Disposition) new Disposition.Ack(DeliveryOutcome.PROCESSED));
            }
            if (tryNo >= COMPLETION_TRIES) {
                LOG.error("idempotency consumer '{}': message {} was processed but its outcome could not be stored: {};"
                    + " it comes back, and runs again once its hold ran out", settings.name(), message.messageId(),
                    unwrap(failure).toString());
                return done((Disposition) new Disposition.Retry(settings.inProgressDelay(),
                    "processed, but the outcome could not be stored: " + unwrap(failure), false, DeliveryOutcome.REQUEUED));
            }
            CompletableFuture<Disposition> later = new CompletableFuture<>();
            timer.schedule(() -> storeOutcome(message, key, token, tryNo + 1).whenComplete((d, f) -> later.complete(d)),
                100L << (2 * (tryNo - 1)), TimeUnit.MILLISECONDS);
            return later;
        }).thenCompose(d -> d);
    }

    /** The answer for an acquire that did not acquire. */
    private Disposition answer(ReceivedMessage message, AcquireResult result) {
        if (result instanceof AcquireResult.Replay) {
            return new Disposition.Ack(DeliveryOutcome.DUPLICATE);
        }
        if (result instanceof AcquireResult.Mismatch) {
            return new Disposition.DeadLetter("message id " + message.messageId() + " was processed before with a"
                + " different body: an id was reused for another message");
        }
        return new Disposition.Retry(settings.inProgressDelay(), "message id " + message.messageId()
            + " is being processed elsewhere", false, DeliveryOutcome.REQUEUED);
    }

    private Disposition notAnswered(ReceivedMessage message, Throwable failure) {
        Throwable cause = unwrap(failure);
        LOG.warn("idempotency consumer '{}': the store did not answer for message {}: {}; it comes back in {}",
            settings.name(), message.messageId(), cause.toString(), settings.inProgressDelay());
        return new Disposition.Retry(settings.inProgressDelay(), "the idempotency store did not answer: " + cause, false,
            DeliveryOutcome.REQUEUED);
    }

    private Disposition failed(ReceivedMessage message, Throwable cause) {
        int failures = message.attempt() + 1;
        if (cause instanceof UnreadableMessageException) {
            LOG.error("idempotency consumer '{}': message {} cannot be read, dead-lettered: {}", settings.name(),
                message.messageId(), cause.getMessage());
            return new Disposition.DeadLetter("the message cannot be read: " + cause.getMessage());
        }
        if (failures >= settings.maxAttempts()) {
            LOG.error("idempotency consumer '{}': message {} failed {} times, dead-lettered: {}", settings.name(),
                message.messageId(), failures, cause.toString());
            return new Disposition.DeadLetter("the handler failed " + failures + " times; the last failure: " + cause);
        }
        Duration wait = settings.retryDelay(failures);
        LOG.warn("idempotency consumer '{}': message {} failed (attempt {} of {}): {}; it comes back in {}",
            settings.name(), message.messageId(), failures, settings.maxAttempts(), cause.toString(), wait);
        return new Disposition.Retry(wait, cause.toString(), true, DeliveryOutcome.RETRIED);
    }

    private Disposition counted(Disposition d, ConsumerTracing.DeliverySpan span) {
        metrics.delivery(settings.name(), d.outcome());
        span.end(d);
        return d;
    }

    /** @return the delivery's span (CONTRACT O4), or one that records nothing without tracing */
    private ConsumerTracing.DeliverySpan span(ReceivedMessage message, String key) {
        return tracing == null ? ConsumerTracing.DeliverySpan.NONE : tracing.start(settings.name(), message, key.substring(0, 12));
    }

    /** The message's fingerprint: a version byte, then SHA-256 of its body. */
    private static byte[] fingerprint(ReceivedMessage message) {
        byte[] digest = sha256().digest(message.body());
        byte[] fp = new byte[digest.length + 1];
        fp[0] = FINGERPRINT_VERSION;
        System.arraycopy(digest, 0, fp, 1, digest.length);
        return fp;
    }

    private static void field(MessageDigest sha, String value) {
        byte[] b = value.getBytes(StandardCharsets.UTF_8);
        sha.update((byte) (b.length >>> 24));
        sha.update((byte) (b.length >>> 16));
        sha.update((byte) (b.length >>> 8));
        sha.update((byte) b.length);
        sha.update(b);
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }

    private static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** A failure of the handler, told apart from the store's inside a transaction. */
    private static final class HandlerFailure extends RuntimeException {
        HandlerFailure(Throwable cause) {
            super(cause.toString(), cause, false, false);
        }
    }
}
