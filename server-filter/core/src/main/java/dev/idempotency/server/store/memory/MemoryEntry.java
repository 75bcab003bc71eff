package dev.idempotency.server.store.memory;

import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.StoredResponseCodec;

import java.time.Instant;
import java.util.Arrays;

/**
 * One record, immutable: {@code data} holds the fingerprint ({@code fingerprintLength} bytes)
 * and, once completed, the encoded response after it; in progress, {@code deadline} is the
 * lease's end, and {@code traceparent} the holder's trace context when it passed one (CONTRACT O4).
 * Identity tells a record from a later one of the same key.
 */
final class MemoryEntry {
    final Object key;
    final byte[] data;
    final int fingerprintLength;
    final long token;
    final long acquiredAt;
    final long deadline;
    final long weight;
    final String traceparent;

    MemoryEntry(Object key, byte[] data, int fingerprintLength, long token, long acquiredAt, long deadline) {
        this(key, data, fingerprintLength, token, acquiredAt, deadline, null);
    }

    MemoryEntry(Object key, byte[] data, int fingerprintLength, long token, long acquiredAt, long deadline,
                String traceparent) {
        this.key = key;
        this.data = data;
        this.fingerprintLength = fingerprintLength;
        this.token = token;
        this.acquiredAt = acquiredAt;
        this.deadline = deadline;
        this.traceparent = traceparent;
        this.weight = InMemoryIdempotencyStore.weight(key, data) + (traceparent == null ? 0 : traceparent.length());
    }

    boolean isExpired(long now) {
        return now >= deadline;
    }

    /** An encoded response is never empty, so a record is completed when its array goes past the fingerprint. */
    boolean completed() {
        return data.length > fingerprintLength;
    }

    /** @return whether this is the in-progress record of the holder of {@code fencingToken} */
    boolean isHeldWith(long fencingToken) {
        return token == fencingToken && !completed();
    }

    boolean hasFingerprint(byte[] fingerprint) {
        return Arrays.equals(data, 0, fingerprintLength, fingerprint, 0, fingerprint.length);
    }

    StoredResponse response() {
        return StoredResponseCodec.decode(data, fingerprintLength);
    }

    RecordInfo info() {
        if (!completed()) {
            return new RecordInfo(key.toString(), RecordInfo.State.IN_PROGRESS, token,
                Instant.ofEpochMilli(acquiredAt), Instant.ofEpochMilli(deadline), 0, -1);
        }
        return new RecordInfo(key.toString(), RecordInfo.State.COMPLETED, token, Instant.ofEpochMilli(acquiredAt),
            Instant.ofEpochMilli(deadline), StoredResponseCodec.status(data, fingerprintLength),
            StoredResponseCodec.bodyLength(data, fingerprintLength, data.length - fingerprintLength));
    }
}
