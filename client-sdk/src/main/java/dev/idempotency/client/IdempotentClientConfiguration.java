package dev.idempotency.client;

import io.micronaut.core.naming.Named;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The Micronaut configuration of one named idempotent client, under
 * {@code idempotency.client.<name>.*} (e.g. {@code idempotency.client.payments.max-attempts: 5}).
 * Each configured name becomes an {@link IdempotentClient} bean qualified by {@code @Named("<name>")};
 * the values are checked by {@link IdempotentClientConfig.Builder} at startup.
 */
public interface IdempotentClientConfiguration extends Named {

    /** The prefix of every named client's settings. */
    String PREFIX = "idempotency.client";
    /** Default attempts per operation, the first included. */
    int DEFAULT_MAX_ATTEMPTS = 4;
    /** Default backoff ceiling before the first retry. */
    Duration DEFAULT_BASE_DELAY = Duration.ofMillis(250);
    /** Default growth factor of the backoff ceiling. */
    double DEFAULT_MULTIPLIER = 2.0;
    /** Default cap on the backoff ceiling. */
    Duration DEFAULT_MAX_DELAY = Duration.ofSeconds(10);
    /** Default overall deadline of one operation. */
    Duration DEFAULT_DEADLINE = Duration.ofSeconds(30);
    /** Default timeout of one attempt. */
    Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofSeconds(10);
    /** Default longest Retry-After honoured. */
    Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofSeconds(20);
    /** Default retried statuses (a 409 only when it is the in-progress problem). */
    Set<Integer> DEFAULT_RETRYABLE_STATUSES = Set.of(408, 409, 425, 429, 500, 502, 503, 504);
    /** Default: the retry budget is on. */
    boolean DEFAULT_BUDGET_ENABLED = true;
    /** Default tokens of a host's retry budget. */
    double DEFAULT_BUDGET_CAPACITY = 10.0;
    /** Default tokens a success gives back. */
    double DEFAULT_BUDGET_REFILL_PER_SUCCESS = 0.1;
    /** Default key format. */
    KeyFormat DEFAULT_KEY_FORMAT = KeyFormat.QUOTED;
    /** Inside an operation under the server filter, calls send derived keys (C11). */
    boolean DEFAULT_DERIVE_KEYS = true;
    /** Default request header carrying the key. */
    String DEFAULT_HEADER_NAME = "Idempotency-Key";
    /** Default response header marking a replay. */
    String DEFAULT_REPLAYED_HEADER_NAME = "Idempotent-Replayed";

    /** @return the Micronaut HTTP client id (a service id under {@code micronaut.http.services}) or base URL, as configured; when empty, the service named like the client if one is configured, else the default client */
    Optional<String> getClientId();

    /** @return attempts per operation */
    int getMaxAttempts();

    /** @return backoff ceiling before the first retry */
    Duration getBaseDelay();

    /** @return growth factor of the backoff ceiling */
    double getMultiplier();

    /** @return cap on the backoff ceiling */
    Duration getMaxDelay();

    /** @return overall deadline of one operation */
    Duration getDeadline();

    /** @return timeout of one attempt */
    Duration getAttemptTimeout();

    /** @return longest Retry-After honoured */
    Duration getMaxRetryAfter();

    /** @return retried statuses */
    Set<Integer> getRetryableStatuses();

    /** @return whether the retry budget is on */
    boolean isBudgetEnabled();

    /** @return tokens of a host's retry budget */
    double getBudgetCapacity();

    /** @return tokens a success gives back */
    double getBudgetRefillPerSuccess();

    /** @return key format */
    KeyFormat getKeyFormat();

    /** @return whether calls inside an operation under the server filter send derived keys (C11) */
    boolean isDeriveKeys();

    /** @return request header carrying the key */
    String getHeaderName();

    /** @return response header marking a replay */
    String getReplayedHeaderName();

    /**
     * @return a builder holding these values, each validated
     * @throws IllegalArgumentException naming the bad value
     */
    default IdempotentClientConfig.Builder toBuilder() {
        return IdempotentClientConfig.custom()
            .name(getName())
            .maxAttempts(getMaxAttempts())
            .baseDelay(getBaseDelay())
            .multiplier(getMultiplier())
            .maxDelay(getMaxDelay())
            .deadline(getDeadline())
            .attemptTimeout(getAttemptTimeout())
            .maxRetryAfter(getMaxRetryAfter())
            .retryableStatuses(getRetryableStatuses())
            .budgetEnabled(isBudgetEnabled())
            .budgetCapacity(getBudgetCapacity())
            .budgetRefillPerSuccess(getBudgetRefillPerSuccess())
            .keyFormat(getKeyFormat())
            .deriveKeys(isDeriveKeys())
            .headerName(getHeaderName())
            .replayedHeaderName(getReplayedHeaderName());
    }
}
