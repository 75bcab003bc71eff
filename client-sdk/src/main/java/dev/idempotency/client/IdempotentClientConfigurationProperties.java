package dev.idempotency.client;

import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.naming.Named;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * {@code idempotency.client.<name>.*}: the settings of one named idempotent client, e.g.
 * {@code idempotency.client.payments.max-attempts: 5}. Each configured name becomes an
 * {@link IdempotentClient} bean qualified by {@code @Named("<name>")}, built from
 * {@link #toBuilder()}, so the values are checked by {@link IdempotentClientConfig.Builder} at
 * startup. Public because Micronaut binds it; code reads the settings as an
 * {@link IdempotentClientConfig} ({@link IdempotentClient#config()}).
 */
@Internal
@EachProperty(IdempotentClientConfigurationProperties.PREFIX)
public class IdempotentClientConfigurationProperties implements Named {

    /** The prefix of every named client's settings. */
    public static final String PREFIX = "idempotency.client";
    /** Default attempts per operation, the first included. */
    public static final int DEFAULT_MAX_ATTEMPTS = 4;
    /** Default backoff ceiling before the first retry. */
    public static final Duration DEFAULT_BASE_DELAY = Duration.ofMillis(250);
    /** Default growth factor of the backoff ceiling. */
    public static final double DEFAULT_MULTIPLIER = 2.0;
    /** Default cap on the backoff ceiling. */
    public static final Duration DEFAULT_MAX_DELAY = Duration.ofSeconds(10);
    /** Default overall deadline of one operation. */
    public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(30);
    /** Default timeout of one attempt. */
    public static final Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofSeconds(10);
    /** Default longest Retry-After honoured. */
    public static final Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofSeconds(20);
    /** Default retried statuses (a 409 only when it is the in-progress problem). */
    public static final Set<Integer> DEFAULT_RETRYABLE_STATUSES = Set.of(408, 409, 425, 429, 500, 502, 503, 504);
    /** Default: the retry budget is on. */
    public static final boolean DEFAULT_BUDGET_ENABLED = true;
    /** Default tokens of a host's retry budget. */
    public static final double DEFAULT_BUDGET_CAPACITY = 10.0;
    /** Default tokens a success gives back. */
    public static final double DEFAULT_BUDGET_REFILL_PER_SUCCESS = 0.1;
    /** Default key format. */
    public static final KeyFormat DEFAULT_KEY_FORMAT = KeyFormat.QUOTED;
    /** Inside an operation under the server filter, calls send derived keys (C11). */
    public static final boolean DEFAULT_DERIVE_KEYS = true;
    /** Default request header carrying the key. */
    public static final String DEFAULT_HEADER_NAME = "Idempotency-Key";
    /** Default response header marking a replay. */
    public static final String DEFAULT_REPLAYED_HEADER_NAME = "Idempotent-Replayed";


    private final String name;
    private String clientId;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration baseDelay = DEFAULT_BASE_DELAY;
    private double multiplier = DEFAULT_MULTIPLIER;
    private Duration maxDelay = DEFAULT_MAX_DELAY;
    private Duration deadline = DEFAULT_DEADLINE;
    private Duration attemptTimeout = DEFAULT_ATTEMPT_TIMEOUT;
    private Duration maxRetryAfter = DEFAULT_MAX_RETRY_AFTER;
    private Set<Integer> retryableStatuses = DEFAULT_RETRYABLE_STATUSES;
    private boolean budgetEnabled = DEFAULT_BUDGET_ENABLED;
    private double budgetCapacity = DEFAULT_BUDGET_CAPACITY;
    private double budgetRefillPerSuccess = DEFAULT_BUDGET_REFILL_PER_SUCCESS;
    private KeyFormat keyFormat = DEFAULT_KEY_FORMAT;
    private boolean deriveKeys = DEFAULT_DERIVE_KEYS;
    private String headerName = DEFAULT_HEADER_NAME;
    private String replayedHeaderName = DEFAULT_REPLAYED_HEADER_NAME;

    /**
     * @param name the client's name, the {@code <name>} in the property path
     */
    public IdempotentClientConfigurationProperties(@Parameter String name) {
        this.name = name;
    }

    public String getName() {
        return name;
    }

    public Optional<String> getClientId() {
        return Optional.ofNullable(clientId);
    }

    /**
     * The Micronaut HTTP client to send through: a service id configured under
     * {@code micronaut.http.services.<id>}, or a base URL such as {@code https://api.example.com}.
     * Default: the client's own name when {@code micronaut.http.services.<name>} is configured,
     * else none: the default HTTP client (operations then need absolute URIs).
     *
     * @param clientId the service id or URL
     */
    public void setClientId(@Nullable String clientId) {
        this.clientId = clientId;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * Attempts per operation, the first included (1 to 100). Default {@value #DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts the attempts
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Duration getBaseDelay() {
        return baseDelay;
    }

    /**
     * The backoff ceiling before the first retry; the wait is random between 0 and the ceiling
     * (full jitter). Default 250ms.
     *
     * @param baseDelay the base delay
     */
    public void setBaseDelay(Duration baseDelay) {
        this.baseDelay = baseDelay;
    }

    public double getMultiplier() {
        return multiplier;
    }

    /**
     * The factor the backoff ceiling grows by per retry (1.0 or more). Default {@value #DEFAULT_MULTIPLIER}.
     *
     * @param multiplier the multiplier
     */
    public void setMultiplier(double multiplier) {
        this.multiplier = multiplier;
    }

    public Duration getMaxDelay() {
        return maxDelay;
    }

    /**
     * The cap on the backoff ceiling, applied before the jitter. Default 10s.
     *
     * @param maxDelay the cap
     */
    public void setMaxDelay(Duration maxDelay) {
        this.maxDelay = maxDelay;
    }

    public Duration getDeadline() {
        return deadline;
    }

    /**
     * The overall deadline of one operation, all attempts and waits included. Default 30s.
     *
     * @param deadline the deadline
     */
    public void setDeadline(Duration deadline) {
        this.deadline = deadline;
    }

    public Duration getAttemptTimeout() {
        return attemptTimeout;
    }

    /**
     * The timeout of one attempt; a timed-out attempt is retried. Default 10s.
     *
     * @param attemptTimeout the timeout
     */
    public void setAttemptTimeout(Duration attemptTimeout) {
        this.attemptTimeout = attemptTimeout;
    }

    public Duration getMaxRetryAfter() {
        return maxRetryAfter;
    }

    /**
     * The longest {@code Retry-After} honoured; a longer one is clamped to it (one that points
     * past the deadline ends the operation instead). Default 20s.
     *
     * @param maxRetryAfter the clamp
     */
    public void setMaxRetryAfter(Duration maxRetryAfter) {
        this.maxRetryAfter = maxRetryAfter;
    }

    public Set<Integer> getRetryableStatuses() {
        return retryableStatuses;
    }

    /**
     * The statuses retried. Default 408, 409, 425, 429, 500, 502, 503, 504; a 409 only when it
     * is the filter's {@code idempotency-request-in-progress} problem. 400, 401, 403, 404, 413
     * and 422 are refused.
     *
     * @param retryableStatuses the statuses
     */
    public void setRetryableStatuses(Set<Integer> retryableStatuses) {
        this.retryableStatuses = retryableStatuses;
    }

    public boolean isBudgetEnabled() {
        return budgetEnabled;
    }

    /**
     * Whether retries spend tokens of the per-host retry budget. Default {@value #DEFAULT_BUDGET_ENABLED}.
     *
     * @param budgetEnabled on or off
     */
    public void setBudgetEnabled(boolean budgetEnabled) {
        this.budgetEnabled = budgetEnabled;
    }

    public double getBudgetCapacity() {
        return budgetCapacity;
    }

    /**
     * The tokens a host's retry budget holds when full; each retry spends one. Default {@value #DEFAULT_BUDGET_CAPACITY}.
     *
     * @param budgetCapacity the capacity
     */
    public void setBudgetCapacity(double budgetCapacity) {
        this.budgetCapacity = budgetCapacity;
    }

    public double getBudgetRefillPerSuccess() {
        return budgetRefillPerSuccess;
    }

    /**
     * The tokens each success gives back to its host's budget (more than 0, at most 1).
     * Default {@value #DEFAULT_BUDGET_REFILL_PER_SUCCESS}.
     *
     * @param budgetRefillPerSuccess the refill
     */
    public void setBudgetRefillPerSuccess(double budgetRefillPerSuccess) {
        this.budgetRefillPerSuccess = budgetRefillPerSuccess;
    }

    public KeyFormat getKeyFormat() {
        return keyFormat;
    }

    /**
     * How the key is written in the header: {@code QUOTED}, an RFC 9651 sf-string
     * ({@code "..."}), or {@code BARE}, the key alone, for servers that accept only that.
     * Default {@code QUOTED}.
     *
     * @param keyFormat the format
     */
    public void setKeyFormat(KeyFormat keyFormat) {
        this.keyFormat = keyFormat;
    }

    public boolean isDeriveKeys() {
        return deriveKeys;
    }

    /**
     * Inside an operation under the server filter, a call without a key of the caller's sends a
     * key derived from the operation and the call's step, the same on every execution of the
     * operation, so a handler that runs again does not repeat its downstream calls (CONTRACT C11).
     * Default {@code true}; {@code false} sends a generated key there too.
     *
     * @param deriveKeys whether to derive keys
     */
    public void setDeriveKeys(boolean deriveKeys) {
        this.deriveKeys = deriveKeys;
    }

    public String getHeaderName() {
        return headerName;
    }

    /**
     * The request header carrying the key. Default {@value #DEFAULT_HEADER_NAME}.
     *
     * @param headerName the header name
     */
    public void setHeaderName(String headerName) {
        this.headerName = headerName;
    }

    public String getReplayedHeaderName() {
        return replayedHeaderName;
    }

    /**
     * The response header whose value {@code true} marks a replay. Default {@value #DEFAULT_REPLAYED_HEADER_NAME}.
     *
     * @param replayedHeaderName the header name
     */
    public void setReplayedHeaderName(String replayedHeaderName) {
        this.replayedHeaderName = replayedHeaderName;
    }

    /**
     * @return a builder holding these values, each validated
     * @throws IllegalArgumentException naming the bad value
     */
    public IdempotentClientConfig.Builder toBuilder() {
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
