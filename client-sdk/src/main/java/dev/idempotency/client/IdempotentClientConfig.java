package dev.idempotency.client;

import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.json.JsonMapper;

import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * The immutable settings of an {@link IdempotentClient}. Built with {@link #custom()}; every
 * setter checks its value at once and names the bad value in its message.
 *
 * <pre>{@code
 * IdempotentClientConfig config = IdempotentClientConfig.custom()
 *     .maxAttempts(5)
 *     .baseDelay(Duration.ofMillis(200))
 *     .deadline(Duration.ofSeconds(20))
 *     .build();
 * }</pre>
 *
 * <p>The defaults are the {@code DEFAULT_*} constants of {@link IdempotentClientConfigurationProperties}.
 */
public final class IdempotentClientConfig {

    /** Statuses that are never retried, whatever the configuration says (CONTRACT C4). */
    static final Set<Integer> NEVER_RETRIED = Set.of(400, 401, 403, 404, 413, 422);

    private final String name;
    private final int maxAttempts;
    private final Duration baseDelay;
    private final double multiplier;
    private final Duration maxDelay;
    private final Duration deadline;
    private final Duration attemptTimeout;
    private final Duration maxRetryAfter;
    private final Set<Integer> retryableStatuses;
    private final boolean budgetEnabled;
    private final double budgetCapacity;
    private final double budgetRefillPerSuccess;
    private final KeyFormat keyFormat;
    private final boolean deriveKeys;
    private final String headerName;
    private final String replayedHeaderName;
    private final Clock clock;
    private final Sleeper sleeper;
    private final RandomGenerator random;
    private final Supplier<String> keyGenerator;
    private final JsonMapper jsonMapper;
    private final Object meterRegistry;

    private IdempotentClientConfig(Builder b) {
        this.name = b.name;
        this.maxAttempts = b.maxAttempts;
        this.baseDelay = b.baseDelay;
        this.multiplier = b.multiplier;
        this.maxDelay = b.maxDelay;
        this.deadline = b.deadline;
        this.attemptTimeout = b.attemptTimeout;
        this.maxRetryAfter = b.maxRetryAfter;
        this.retryableStatuses = Set.copyOf(b.retryableStatuses);
        this.budgetEnabled = b.budgetEnabled;
        this.budgetCapacity = b.budgetCapacity;
        this.budgetRefillPerSuccess = b.budgetRefillPerSuccess;
        this.keyFormat = b.keyFormat;
        this.deriveKeys = b.deriveKeys;
        this.headerName = b.headerName;
        this.replayedHeaderName = b.replayedHeaderName;
        this.clock = b.clock;
        this.sleeper = b.sleeper;
        this.random = b.random;
        this.keyGenerator = b.keyGenerator;
        this.jsonMapper = b.jsonMapper;
        this.meterRegistry = b.meterRegistry;
    }

    /** @return a builder with the defaults */
    public static Builder custom() {
        return new Builder();
    }

    /** @return the defaults */
    public static IdempotentClientConfig ofDefaults() {
        return custom().build();
    }

    /**
     * @param config a configuration to start from
     * @return a builder holding its values
     */
    public static Builder from(IdempotentClientConfig config) {
        Builder b = new Builder();
        b.name = config.name;
        b.maxAttempts = config.maxAttempts;
        b.baseDelay = config.baseDelay;
        b.multiplier = config.multiplier;
        b.maxDelay = config.maxDelay;
        b.deadline = config.deadline;
        b.attemptTimeout = config.attemptTimeout;
        b.maxRetryAfter = config.maxRetryAfter;
        b.retryableStatuses = new TreeSet<>(config.retryableStatuses);
        b.budgetEnabled = config.budgetEnabled;
        b.budgetCapacity = config.budgetCapacity;
        b.budgetRefillPerSuccess = config.budgetRefillPerSuccess;
        b.keyFormat = config.keyFormat;
        b.deriveKeys = config.deriveKeys;
        b.headerName = config.headerName;
        b.replayedHeaderName = config.replayedHeaderName;
        b.clock = config.clock;
        b.sleeper = config.sleeper;
        b.random = config.random;
        b.keyGenerator = config.keyGenerator;
        b.jsonMapper = config.jsonMapper;
        b.meterRegistry = config.meterRegistry;
        return b;
    }

    /** @return the client's name: the resilience4j Retry's name and the {@code client} metric tag */
    public String name() {
        return name;
    }

    /** @return attempts per operation, the first included */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** @return the backoff ceiling before the first retry */
    public Duration baseDelay() {
        return baseDelay;
    }

    /** @return the factor the backoff ceiling grows by per retry */
    public double multiplier() {
        return multiplier;
    }

    /** @return the cap on the backoff ceiling, applied before the jitter */
    public Duration maxDelay() {
        return maxDelay;
    }

    /** @return the overall deadline of one operation, all attempts and waits included */
    public Duration deadline() {
        return deadline;
    }

    /** @return the timeout of one attempt */
    public Duration attemptTimeout() {
        return attemptTimeout;
    }

    /** @return the longest {@code Retry-After} honoured; longer ones are clamped to it */
    public Duration maxRetryAfter() {
        return maxRetryAfter;
    }

    /** @return the statuses that are retried */
    public Set<Integer> retryableStatuses() {
        return retryableStatuses;
    }

    /** @return whether the per-host retry budget is on */
    public boolean budgetEnabled() {
        return budgetEnabled;
    }

    /** @return the tokens a host's budget holds when full; each retry spends one */
    public double budgetCapacity() {
        return budgetCapacity;
    }

    /** @return the tokens a success gives back to its host's budget */
    public double budgetRefillPerSuccess() {
        return budgetRefillPerSuccess;
    }

    /** @return how the key is written in the header */
    public KeyFormat keyFormat() {
        return keyFormat;
    }

    /**
     * @return whether a call made inside an operation under the server filter sends a key derived
     *     from that operation and the call's step (CONTRACT C11) instead of a generated one
     */
    public boolean deriveKeys() {
        return deriveKeys;
    }

    /** @return the request header carrying the key */
    public String headerName() {
        return headerName;
    }

    /** @return the response header that marks a replay */
    public String replayedHeaderName() {
        return replayedHeaderName;
    }

    /** @return the clock deadlines are measured on */
    public Clock clock() {
        return clock;
    }

    /** @return what waits between attempts */
    public Sleeper sleeper() {
        return sleeper;
    }

    /** @return where the jitter comes from */
    public RandomGenerator random() {
        return random != null ? random : ThreadLocalRandom.current();
    }

    /** @return what makes a key for an operation without the caller's own */
    public Supplier<String> keyGenerator() {
        return keyGenerator;
    }

    /** @return the mapper for typed bodies and problem bodies, if one was set */
    @Nullable
    public JsonMapper jsonMapper() {
        return jsonMapper;
    }

    /**
     * @return the Micrometer {@code MeterRegistry} the client meters into, if one was set (typed
     *     {@code Object} so that Micrometer stays an optional dependency)
     */
    @Nullable
    public Object meterRegistry() {
        return meterRegistry;
    }

    @Override
    public String toString() {
        return "IdempotentClientConfig[name=" + name + ", maxAttempts=" + maxAttempts + ", baseDelay=" + baseDelay
            + ", multiplier=" + multiplier + ", maxDelay=" + maxDelay + ", deadline=" + deadline
            + ", attemptTimeout=" + attemptTimeout + ", maxRetryAfter=" + maxRetryAfter
            + ", retryableStatuses=" + new TreeSet<>(retryableStatuses) + ", budgetEnabled=" + budgetEnabled
            + ", budgetCapacity=" + budgetCapacity + ", budgetRefillPerSuccess=" + budgetRefillPerSuccess
            + ", keyFormat=" + keyFormat + ", deriveKeys=" + deriveKeys + "]";
    }

    /**
     * Builds an {@link IdempotentClientConfig}. Not thread-safe; each setter validates its value.
     */
    public static final class Builder {
        private String name = "default";
        private int maxAttempts = IdempotentClientConfigurationProperties.DEFAULT_MAX_ATTEMPTS;
        private Duration baseDelay = IdempotentClientConfigurationProperties.DEFAULT_BASE_DELAY;
        private double multiplier = IdempotentClientConfigurationProperties.DEFAULT_MULTIPLIER;
        private Duration maxDelay = IdempotentClientConfigurationProperties.DEFAULT_MAX_DELAY;
        private Duration deadline = IdempotentClientConfigurationProperties.DEFAULT_DEADLINE;
        private Duration attemptTimeout = IdempotentClientConfigurationProperties.DEFAULT_ATTEMPT_TIMEOUT;
        private Duration maxRetryAfter = IdempotentClientConfigurationProperties.DEFAULT_MAX_RETRY_AFTER;
        private Set<Integer> retryableStatuses = new TreeSet<>(IdempotentClientConfigurationProperties.DEFAULT_RETRYABLE_STATUSES);
        private boolean budgetEnabled = IdempotentClientConfigurationProperties.DEFAULT_BUDGET_ENABLED;
        private double budgetCapacity = IdempotentClientConfigurationProperties.DEFAULT_BUDGET_CAPACITY;
        private double budgetRefillPerSuccess = IdempotentClientConfigurationProperties.DEFAULT_BUDGET_REFILL_PER_SUCCESS;
        private KeyFormat keyFormat = IdempotentClientConfigurationProperties.DEFAULT_KEY_FORMAT;
        private boolean deriveKeys = IdempotentClientConfigurationProperties.DEFAULT_DERIVE_KEYS;
        private String headerName = IdempotentClientConfigurationProperties.DEFAULT_HEADER_NAME;
        private String replayedHeaderName = IdempotentClientConfigurationProperties.DEFAULT_REPLAYED_HEADER_NAME;
        private Clock clock = Clock.systemUTC();
        private Sleeper sleeper = Sleeper.system();
        private RandomGenerator random;
        private Supplier<String> keyGenerator = () -> UUID.randomUUID().toString();
        private JsonMapper jsonMapper;
        private Object meterRegistry;

        private Builder() {
        }

        /**
         * @param name the client's name (resilience4j Retry name, {@code client} metric tag); not blank
         * @return this builder
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("name must not be blank, got: '" + name + "'");
            }
            this.name = name;
            return this;
        }

        /**
         * @param maxAttempts attempts per operation, the first included: 1 (no retries) to 100
         * @return this builder
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > 100) {
                throw new IllegalArgumentException("maxAttempts must be between 1 and 100, got: " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * @param baseDelay the backoff ceiling before the first retry; at least 1 ms
         * @return this builder
         */
        public Builder baseDelay(Duration baseDelay) {
            this.baseDelay = atLeast("baseDelay", baseDelay, Duration.ofMillis(1));
            return this;
        }

        /**
         * @param multiplier the factor the ceiling grows by per retry; 1.0 (no growth) or more, finite
         * @return this builder
         */
        public Builder multiplier(double multiplier) {
            if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
                throw new IllegalArgumentException("multiplier must be a finite number >= 1.0, got: " + multiplier);
            }
            this.multiplier = multiplier;
            return this;
        }

        /**
         * @param maxDelay the cap on the backoff ceiling (applied before the jitter); at least
         *                 the base delay, checked by {@link #build()}
         * @return this builder
         */
        public Builder maxDelay(Duration maxDelay) {
            this.maxDelay = atLeast("maxDelay", maxDelay, Duration.ofMillis(1));
            return this;
        }

        /**
         * @param deadline the overall deadline of one operation, all attempts and waits included; positive
         * @return this builder
         */
        public Builder deadline(Duration deadline) {
            this.deadline = atLeast("deadline", deadline, Duration.ofMillis(1));
            return this;
        }

        /**
         * @param attemptTimeout the timeout of one attempt (bounded by the time left to the deadline); positive
         * @return this builder
         */
        public Builder attemptTimeout(Duration attemptTimeout) {
            this.attemptTimeout = atLeast("attemptTimeout", attemptTimeout, Duration.ofMillis(1));
            return this;
        }

        /**
         * @param maxRetryAfter the longest {@code Retry-After} honoured; a longer one that still
         *                      ends before the deadline is clamped to this. Zero or more.
         * @return this builder
         */
        public Builder maxRetryAfter(Duration maxRetryAfter) {
            this.maxRetryAfter = atLeast("maxRetryAfter", maxRetryAfter, Duration.ZERO);
            return this;
        }

        /**
         * @param statuses the statuses to retry, each 408 or 4xx/5xx; never 400, 401, 403, 404,
         *                 413 or 422, which no retry can change (C4). A 409 is retried only when
         *                 it is the filter's {@code idempotency-request-in-progress} problem.
         * @return this builder
         */
        public Builder retryableStatuses(Collection<Integer> statuses) {
            Objects.requireNonNull(statuses, "statuses");
            TreeSet<Integer> copy = new TreeSet<>();
            for (Integer s : statuses) {
                if (s == null || s < 400 || s > 599) {
                    throw new IllegalArgumentException("retryableStatuses must hold 4xx or 5xx statuses, got: " + s);
                }
                if (NEVER_RETRIED.contains(s)) {
                    throw new IllegalArgumentException("retryableStatuses must not hold " + s
                        + ": the contract never retries 400, 401, 403, 404, 413 or 422 (a retry cannot change the answer)");
                }
                copy.add(s);
            }
            this.retryableStatuses = copy;
            return this;
        }

        /**
         * @param enabled whether retries spend tokens from the per-host retry budget (C7)
         * @return this builder
         */
        public Builder budgetEnabled(boolean enabled) {
            this.budgetEnabled = enabled;
            return this;
        }

        /**
         * @param capacity the tokens a host's budget holds when full (and starts with); at least 1
         * @return this builder
         */
        public Builder budgetCapacity(double capacity) {
            if (!(capacity >= 1.0) || Double.isInfinite(capacity)) {
                throw new IllegalArgumentException("budgetCapacity must be a finite number >= 1, got: " + capacity);
            }
            this.budgetCapacity = capacity;
            return this;
        }

        /**
         * @param refill the tokens each success gives back to its host's budget; more than 0,
         *               at most 1 (at most one retry earned per success)
         * @return this builder
         */
        public Builder budgetRefillPerSuccess(double refill) {
            if (!(refill > 0.0) || refill > 1.0) {
                throw new IllegalArgumentException("budgetRefillPerSuccess must be > 0 and <= 1, got: " + refill);
            }
            this.budgetRefillPerSuccess = refill;
            return this;
        }

        /**
         * @param keyFormat quoted sf-string (default) or bare token (C2)
         * @return this builder
         */
        public Builder keyFormat(KeyFormat keyFormat) {
            this.keyFormat = Objects.requireNonNull(keyFormat, "keyFormat");
            return this;
        }

        /**
         * @param deriveKeys {@code true} (the default): inside an operation under the server
         *                   filter, a call without a key of the caller's sends one derived from the
         *                   operation and the call's step, the same on every execution of the
         *                   operation (C11); {@code false}: a generated key, as outside one
         * @return this builder
         */
        public Builder deriveKeys(boolean deriveKeys) {
            this.deriveKeys = deriveKeys;
            return this;
        }

        /**
         * @param headerName the request header carrying the key; a valid header name
         * @return this builder
         */
        public Builder headerName(String headerName) {
            this.headerName = token("headerName", headerName);
            return this;
        }

        /**
         * @param replayedHeaderName the response header whose value {@code true} marks a replay
         * @return this builder
         */
        public Builder replayedHeaderName(String replayedHeaderName) {
            this.replayedHeaderName = token("replayedHeaderName", replayedHeaderName);
            return this;
        }

        /**
         * @param clock the clock deadlines and HTTP-date {@code Retry-After}s are measured on
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * @param sleeper what waits between attempts (tests pass one that records the waits)
         * @return this builder
         */
        public Builder sleeper(Sleeper sleeper) {
            this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
            return this;
        }

        /**
         * @param random where the jitter comes from; must be thread-safe if the client is shared
         *               (e.g. a seeded {@link java.util.Random}). Default: {@link ThreadLocalRandom}.
         * @return this builder
         */
        public Builder random(RandomGenerator random) {
            this.random = Objects.requireNonNull(random, "random");
            return this;
        }

        /**
         * @param keyGenerator makes the key of an operation that has none of the caller's;
         *                     default {@code UUID.randomUUID().toString()}. Called once per
         *                     operation, before its first attempt.
         * @return this builder
         */
        public Builder keyGenerator(Supplier<String> keyGenerator) {
            this.keyGenerator = Objects.requireNonNull(keyGenerator, "keyGenerator");
            return this;
        }

        /**
         * @param jsonMapper decodes typed bodies and problem bodies; default
         *                   {@link JsonMapper#createDefault()} (the JSON implementation on the classpath)
         * @return this builder
         */
        public Builder jsonMapper(JsonMapper jsonMapper) {
            this.jsonMapper = Objects.requireNonNull(jsonMapper, "jsonMapper");
            return this;
        }

        /**
         * @param meterRegistry where the client's meters go (needs micrometer-core and
         *                      resilience4j-micrometer on the classpath)
         * @return this builder
         */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        /**
         * @return the configuration
         * @throws IllegalArgumentException when the values contradict each other
         */
        public IdempotentClientConfig build() {
            if (maxDelay.compareTo(baseDelay) < 0) {
                throw new IllegalArgumentException("maxDelay (" + maxDelay + ") must not be less than baseDelay (" + baseDelay + ")");
            }
            return new IdempotentClientConfig(this);
        }

        private static Duration atLeast(String what, Duration value, Duration min) {
            if (value == null || value.compareTo(min) < 0) {
                throw new IllegalArgumentException(what + " must be at least " + min + ", got: " + value);
            }
            return value;
        }

        private static String token(String what, String value) {
            if (value == null || value.isEmpty() || !value.chars().allMatch(c -> c > 0x20 && c < 0x7F
                && "()<>@,;:\\\"/[]?={}".indexOf(c) < 0)) {
                throw new IllegalArgumentException(what + " must be a valid HTTP header name, got: '" + value + "'");
            }
            return value;
        }
    }
}
