package dev.idempotency.server.internal.response;

import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.util.concurrent.CompletableFuture;

/**
 * Waits for the first item of a stream before the stream is handed on, the way the server
 * itself treats a streamed response: an error before the first item can still become an error
 * response, while the items, the first one included, flow on with backpressure once a single
 * subscriber arrives.
 *
 * <p>It subscribes to {@code upstream} at once and asks for one item. {@link #ready()}
 * completes with this gate as a {@link Publisher} when that item (or the end of an empty stream)
 * arrives, or fails with an error that comes first. The subscriber then receives the held item
 * on its first request and everything else from upstream; a completion or error that arrives
 * while the first item is being handed over waits until it has been.
 *
 * @param <T> the item type
 */
final class FirstItemGate<T> implements Subscriber<T>, Publisher<T>, Subscription {

    private final CompletableFuture<Publisher<T>> ready = new CompletableFuture<>();
    private Subscription upstream;
    private volatile Subscriber<? super T> downstream;
    private boolean receivedFirst; // upstream signals only

    // guarded by this
    private T first;
    private boolean handingOver;
    private boolean handedOver;
    private long heldDemand;
    private boolean heldComplete;
    private Throwable heldError;

    private FirstItemGate() {
    }

    /** Subscribes to {@code upstream} and returns the gate. */
    static <T> FirstItemGate<T> open(Publisher<T> upstream) {
        FirstItemGate<T> gate = new FirstItemGate<>();
        upstream.subscribe(gate);
        return gate;
    }

    /** @return completes with this gate once the first item or the end arrived; fails with an earlier error */
    CompletableFuture<Publisher<T>> ready() {
        return ready;
    }

    @Override
    public void onSubscribe(Subscription s) {
        upstream = s;
        s.request(1);
    }

    @Override
    public void onNext(T item) {
        if (!receivedFirst) {
            receivedFirst = true;
            synchronized (this) {
                first = item;
            }
            ready.complete(this);
            return;
        }
        downstream.onNext(item);
    }

    @Override
    public void onError(Throwable t) {
        if (!receivedFirst) {
            receivedFirst = true;
            ready.completeExceptionally(t);
            return;
        }
        synchronized (this) {
            if (!handedOver) {
                heldError = t;
                return;
            }
        }
        downstream.onError(t);
    }

    @Override
    public void onComplete() {
        if (!receivedFirst) {
            receivedFirst = true;
            ready.complete(this);
        }
        synchronized (this) {
            if (!handedOver) {
                heldComplete = true;
                return;
            }
        }
        downstream.onComplete();
    }

    @Override
    public void subscribe(Subscriber<? super T> subscriber) {
        if (downstream != null) {
            subscriber.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                }
            });
            subscriber.onError(new IllegalStateException("a captured response stream can be subscribed only once"));
            return;
        }
        downstream = subscriber;
        subscriber.onSubscribe(this);
    }

    @Override
    public void request(long n) {
        if (n <= 0) {
            cancel();
            downstream.onError(new IllegalArgumentException("Reactive Streams rule 3.9: request must be positive"));
            return;
        }
        T item;
        synchronized (this) {
            if (handedOver) {
                item = null;
            } else if (handingOver) {
                heldDemand = add(heldDemand, n); // re-entrant request from inside onNext(first)
                return;
            } else {
                handingOver = true;
                item = first;
                first = null;
            }
        }
        if (!handingOverBy(item, n)) {
            upstream.request(n);
        }
    }

    /** Hands the first item over; {@code false} when that was done before and {@code n} is for upstream. */
    private boolean handingOverBy(T item, long n) {
        boolean mine;
        synchronized (this) {
            mine = handingOver && !handedOver;
        }
        if (!mine) {
            return false;
        }
        if (item != null) {
            downstream.onNext(item);
        }
        long more;
        boolean complete;
        Throwable error;
        synchronized (this) {
            handedOver = true;
            more = add(heldDemand, item != null ? n - 1 : n);
            complete = heldComplete;
            error = heldError;
        }
        if (error != null) {
            downstream.onError(error);
        } else if (complete) {
            downstream.onComplete();
        } else if (more > 0) {
            upstream.request(more);
        }
        return true;
    }

    @Override
    public void cancel() {
        synchronized (this) {
            first = null;
        }
        Subscription s = upstream;
        if (s != null) {
            s.cancel();
        }
    }

    private static long add(long a, long b) {
        long sum = a + b;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }
}
