package dev.idempotency.server.store;

import java.util.Objects;

/**
 * An acquire that wrote its record but could not make it durable enough to run the handler on
 * (CONTRACT S24: fewer replicas confirmed it than the store requires), so the request is answered
 * 503 and not run. The store tried to release the record at once; when that failed too
 * ({@link #released()} is false), the filter keeps releasing it in the background, with the
 * fencing token below, until it lands or the lease ends, so the key does not stay locked for a
 * whole lease after a failover.
 */
public class UnconfirmedAcquireException extends IdempotencyStoreException {

    private final String storeKey;
    private final long fencingToken;
    private final boolean released;

    /**
     * @param message      what happened, for the log
     * @param storeKey     the record's store key
     * @param fencingToken the token the acquire was issued
     * @param released     whether the store released the record already
     * @param cause        why the release failed, or {@code null}
     */
    public UnconfirmedAcquireException(String message, String storeKey, long fencingToken, boolean released,
                                       Throwable cause) {
        super(message, cause);
        this.storeKey = Objects.requireNonNull(storeKey, "storeKey");
        this.fencingToken = fencingToken;
        this.released = released;
    }

    /** @return the record's store key */
    public String storeKey() {
        return storeKey;
    }

    /** @return the fencing token of the unconfirmed acquire, which a release needs */
    public long fencingToken() {
        return fencingToken;
    }

    /** @return whether the store released the record already; if not, the filter goes on releasing it */
    public boolean released() {
        return released;
    }
}
