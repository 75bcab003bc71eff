package dev.idempotency.server;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The server filter's settings, bound from {@code idempotency.*}. Immutable once the
 * application has started. See {@link IdempotencyConfigurationProperties} for each setting's
 * meaning and default.
 */
public interface IdempotencyConfiguration {

    /** @return whether the filter is active */
    boolean isEnabled();

    /** @return upper-case names of the methods the contract covers */
    Set<String> getMethods();

    /** @return the request header carrying the key */
    String getHeaderName();

    /** @return whether only the quoted sf-string form of the key is accepted */
    boolean isStrict();

    /** @return whether covered requests carrying a key are handled on routes without {@link Idempotent} */
    boolean isGlobal();

    /** @return how long an in-progress request holds its key */
    Duration getLease();

    /** @return how long a completed result is kept and replayed */
    Duration getRetention();

    /** @return the largest request body fingerprinted; larger bodies get 413 */
    int getMaxRequestBodySize();

    /** @return the largest response body stored for replay; larger ones are replayed as omitted */
    int getMaxStoredBodySize();

    /** @return the largest encoded result of one durable step (CONTRACT S23) */
    default int getStepMaxBytes() {
        return IdempotencyConfigurationProperties.DEFAULT_STEP_MAX_BYTES;
    }

    /** @return lower-case names of response headers stored and replayed */
    Set<String> getStoredHeaders();

    /** @return the header set to {@code true} on replayed responses */
    String getReplayedHeaderName();

    /** @return JSON Pointers of members left out of every JSON body's fingerprint */
    List<String> getIgnoredJsonPointers();

    /** @return request headers included in every fingerprint */
    List<String> getFingerprintHeaders();

    /** @return statuses below 500 that release the key instead of being stored */
    Set<Integer> getReleaseStatuses();

    /** @return whether 2xx-4xx responses that an exception handler made from a thrown exception are stored */
    boolean isReplayHandledExceptions();

    /** @return whether every idempotent route runs in transactional mode (CONTRACT S18) */
    boolean isTransactional();

    /** @return the published contract page; problem {@code type}s are this URL plus {@code #code} */
    URI getContractUrl();

    /** @return the caller identity used when no resolver and no principal identifies the caller */
    String getAnonymousScope();

    /** @return the largest {@code Retry-After} sent with 409 {@code idempotency-request-in-progress} */
    Duration getInFlightRetryAfterMax();

    /** @return how many failed store calls in a row open the store circuit; 0 never opens it */
    default int getStoreCircuitFailures() {
        return IdempotencyConfigurationProperties.DEFAULT_STORE_CIRCUIT_FAILURES;
    }

    /** @return how often one new key goes to the store as a probe while the circuit is open */
    default Duration getStoreCircuitProbeInterval() {
        return IdempotencyConfigurationProperties.DEFAULT_STORE_CIRCUIT_PROBE_INTERVAL;
    }

    /** @return the smallest {@code Retry-After} sent with 409 {@code idempotency-request-in-progress} */
    default Duration getInFlightRetryAfterMin() {
        return IdempotencyConfigurationProperties.DEFAULT_IN_FLIGHT_RETRY_AFTER_MIN;
    }

    /** @return the {@code Retry-After} sent with 503 {@code idempotency-store-unavailable} */
    Duration getStoreUnavailableRetryAfter();
}
