package dev.idempotency.server;

import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.annotation.Internal;

import java.net.URI;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code idempotency.*}: the server filter's settings. Every setter checks its value and fails
 * the application's startup with a message naming the setting and the bad value.
 */
@ConfigurationProperties(IdempotencyConfigurationProperties.PREFIX)
public class IdempotencyConfigurationProperties implements IdempotencyConfiguration {

    /** The prefix of every setting. */
    public static final String PREFIX = "idempotency";
    public static final boolean DEFAULT_ENABLED = true;
    public static final Set<String> DEFAULT_METHODS = Set.of("POST", "PATCH");
    public static final String DEFAULT_HEADER_NAME = "Idempotency-Key";
    public static final boolean DEFAULT_STRICT = false;
    public static final boolean DEFAULT_GLOBAL = false;
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    public static final int DEFAULT_MAX_REQUEST_BODY_SIZE = 1024 * 1024;
    public static final int DEFAULT_MAX_STORED_BODY_SIZE = 1024 * 1024;
    /** The default bound of one durable step's encoded result: 64 KiB. */
    public static final int DEFAULT_STEP_MAX_BYTES = 64 * 1024;
    public static final List<String> DEFAULT_STORED_HEADERS =
        List.of("Content-Type", "Location", "ETag", "Last-Modified", "Content-Language");
    public static final String DEFAULT_REPLAYED_HEADER_NAME = "Idempotent-Replayed";
    public static final boolean DEFAULT_REPLAY_HANDLED_EXCEPTIONS = false;
    public static final boolean DEFAULT_TRANSACTIONAL = false;
    /** The contract page of the published site (contract-docs), which every problem code has an anchor on. */
    public static final String DEFAULT_CONTRACT_PAGE = "https://idempotency.dev/contract/";
    public static final URI DEFAULT_CONTRACT_URL = URI.create(DEFAULT_CONTRACT_PAGE);
    public static final String DEFAULT_ANONYMOUS_SCOPE = "anonymous";
    public static final Duration DEFAULT_STORE_UNAVAILABLE_RETRY_AFTER = Duration.ofSeconds(2);
    public static final Duration DEFAULT_IN_FLIGHT_RETRY_AFTER_MAX = Duration.ofSeconds(5);
    public static final Duration DEFAULT_IN_FLIGHT_RETRY_AFTER_MIN = Duration.ofSeconds(1);
    public static final int DEFAULT_STORE_CIRCUIT_FAILURES = 3;
    public static final Duration DEFAULT_STORE_CIRCUIT_PROBE_INTERVAL = Duration.ofMillis(500);
    /** 408, 425 and 429 ask the client to retry (CONTRACT C4); storing them would replay the refusal. */
    public static final Set<Integer> DEFAULT_RELEASE_STATUSES = Set.of(408, 425, 429);

    /** Response headers that are never stored, whatever {@link #setStoredHeaders} says. */
    static final Set<String> NEVER_STORED = Set.of("set-cookie", "set-cookie2", "authorization",
        "www-authenticate", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
        "content-length", "idempotency-key");

    private static final Set<String> SAFE_METHODS = Set.of("GET", "HEAD", "OPTIONS", "TRACE", "CONNECT");

    private boolean enabled = DEFAULT_ENABLED;
    private Set<String> methods = DEFAULT_METHODS;
    private String headerName = DEFAULT_HEADER_NAME;
    private boolean strict = DEFAULT_STRICT;
    private boolean global = DEFAULT_GLOBAL;
    private Duration lease = DEFAULT_LEASE;
    private Duration retention = DEFAULT_RETENTION;
    private int maxRequestBodySize = DEFAULT_MAX_REQUEST_BODY_SIZE;
    private int maxStoredBodySize = DEFAULT_MAX_STORED_BODY_SIZE;
    private int stepMaxBytes = DEFAULT_STEP_MAX_BYTES;
    private Set<String> storedHeaders = lowerCase(DEFAULT_STORED_HEADERS);
    private String replayedHeaderName = DEFAULT_REPLAYED_HEADER_NAME;
    private List<String> ignoredJsonPointers = List.of();
    private List<String> fingerprintHeaders = List.of();
    private Set<Integer> releaseStatuses = DEFAULT_RELEASE_STATUSES;
    private boolean replayHandledExceptions = DEFAULT_REPLAY_HANDLED_EXCEPTIONS;
    private boolean transactional = DEFAULT_TRANSACTIONAL;
    private URI contractUrl = DEFAULT_CONTRACT_URL;
    private String anonymousScope = DEFAULT_ANONYMOUS_SCOPE;
    private Duration storeUnavailableRetryAfter = DEFAULT_STORE_UNAVAILABLE_RETRY_AFTER;
    private Duration inFlightRetryAfterMax = DEFAULT_IN_FLIGHT_RETRY_AFTER_MAX;
    private Duration inFlightRetryAfterMin = DEFAULT_IN_FLIGHT_RETRY_AFTER_MIN;
    private int storeCircuitFailures = DEFAULT_STORE_CIRCUIT_FAILURES;
    private Duration storeCircuitProbeInterval = DEFAULT_STORE_CIRCUIT_PROBE_INTERVAL;

    @Override
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Whether the filter is active. Default {@value #DEFAULT_ENABLED}.
     *
     * @param enabled {@code false} to turn the filter off
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public Set<String> getMethods() {
        return methods;
    }

    /**
     * The HTTP methods the contract covers on routes of a class-level {@code @Idempotent}, and in
     * global mode. Default POST and PATCH. An {@code @Idempotent} on a method covers its POST,
     * PATCH, PUT or DELETE route whatever this says. Safe methods (GET, HEAD, OPTIONS, TRACE,
     * CONNECT) cannot be added: they are idempotent already.
     *
     * @param methods method names, any case
     */
    public void setMethods(Collection<String> methods) {
        Set<String> upper = new LinkedHashSet<>();
        for (String m : methods) {
            String u = m.trim().toUpperCase(Locale.ROOT);
            if (SAFE_METHODS.contains(u)) {
                throw new IllegalArgumentException(PREFIX + ".methods may not contain the safe method " + u);
            }
            if (u.isEmpty()) {
                throw new IllegalArgumentException(PREFIX + ".methods contains an empty method name");
            }
            upper.add(u);
        }
        if (upper.isEmpty()) {
            throw new IllegalArgumentException(PREFIX + ".methods must name at least one method; "
                + "set " + PREFIX + ".enabled=false to turn the filter off");
        }
        this.methods = Set.copyOf(upper);
    }

    @Override
    public String getHeaderName() {
        return headerName;
    }

    /**
     * The request header carrying the key. Default {@value #DEFAULT_HEADER_NAME}.
     *
     * @param headerName a header name
     */
    public void setHeaderName(String headerName) {
        this.headerName = Checks.headerName(headerName, PREFIX + ".header-name");
    }

    @Override
    public boolean isStrict() {
        return strict;
    }

    /**
     * Accept only the quoted RFC 9651 sf-string form of the key ({@code "abc"}) and reject the
     * bare form ({@code abc}) with 400. Default {@value #DEFAULT_STRICT}.
     *
     * @param strict whether parsing is strict
     */
    public void setStrict(boolean strict) {
        this.strict = strict;
    }

    @Override
    public boolean isGlobal() {
        return global;
    }

    /**
     * Also honour a key on covered requests to routes without {@link Idempotent} (the key is
     * then optional). Default {@value #DEFAULT_GLOBAL}.
     *
     * @param global whether every route is covered
     */
    public void setGlobal(boolean global) {
        this.global = global;
    }

    @Override
    public Duration getLease() {
        return lease;
    }

    /**
     * How long an in-progress request holds its key before another request with the same key
     * may take it over. A running handler renews it every third of this time, so it only runs
     * out when the holder died, stalled, or could not reach the store for the whole lease.
     * Default 30s.
     *
     * @param lease a positive duration
     */
    public void setLease(Duration lease) {
        this.lease = Checks.positive(lease, PREFIX + ".lease");
    }

    @Override
    public Duration getRetention() {
        return retention;
    }

    /**
     * How long a completed result is kept and replayed. After it, the same key runs as a new
     * request. Default 24h.
     *
     * @param retention a positive duration
     */
    public void setRetention(Duration retention) {
        this.retention = Checks.positive(retention, PREFIX + ".retention");
    }

    @Override
    public int getMaxRequestBodySize() {
        return maxRequestBodySize;
    }

    /**
     * The largest request body, in bytes, read to compute the fingerprint; a larger body is
     * answered 413 {@code idempotency-body-too-large} without running the handler. Default
     * {@value #DEFAULT_MAX_REQUEST_BODY_SIZE} bytes (1 MiB).
     *
     * @param maxRequestBodySize bytes, at least 0
     */
    public void setMaxRequestBodySize(int maxRequestBodySize) {
        this.maxRequestBodySize = Checks.atLeast(maxRequestBodySize, 0, PREFIX + ".max-request-body-size");
    }

    @Override
    public int getMaxStoredBodySize() {
        return maxStoredBodySize;
    }

    /**
     * The largest response body, in bytes, stored for replay. A larger (or streamed) body goes
     * to the client untouched and its replay carries status and headers only, with
     * {@code Idempotency-Replay: omitted}. Default
     * {@value #DEFAULT_MAX_STORED_BODY_SIZE} bytes (1 MiB).
     *
     * @param maxStoredBodySize bytes, at least 0
     */
    public void setMaxStoredBodySize(int maxStoredBodySize) {
        this.maxStoredBodySize = Checks.atLeast(maxStoredBodySize, 0, PREFIX + ".max-stored-body-size");
    }

    @Override
    public int getStepMaxBytes() {
        return stepMaxBytes;
    }

    /**
     * The largest encoded result of one durable step (CONTRACT S23), in bytes: a step whose result
     * is larger is not recorded and fails with {@link StepNotRecordedException} (its work ran; the
     * next execution runs it again). Results count in the store's size like responses. Default
     * {@value #DEFAULT_STEP_MAX_BYTES} bytes (64 KiB).
     *
     * @param stepMaxBytes bytes, at least 1
     */
    public void setStepMaxBytes(int stepMaxBytes) {
        this.stepMaxBytes = Checks.atLeast(stepMaxBytes, 1, PREFIX + ".step-max-bytes");
    }

    @Override
    public Set<String> getStoredHeaders() {
        return storedHeaders;
    }

    /**
     * Response headers stored and replayed. Default Content-Type, Location, ETag,
     * Last-Modified, Content-Language. Set-Cookie, Authorization, WWW-Authenticate, Proxy-*
     * and hop-by-hop headers are refused here, because a replay must never hand one caller's
     * credentials or cookies to a retry.
     *
     * @param storedHeaders header names, any case
     */
    public void setStoredHeaders(Collection<String> storedHeaders) {
        Set<String> lower = lowerCase(storedHeaders);
        for (String h : lower) {
            if (NEVER_STORED.contains(h) || h.startsWith("proxy-")) {
                throw new IllegalArgumentException(PREFIX + ".stored-headers may not contain " + h
                    + ": credentials, cookies and hop-by-hop headers are never stored");
            }
        }
        this.storedHeaders = lower;
    }

    @Override
    public String getReplayedHeaderName() {
        return replayedHeaderName;
    }

    /**
     * The header set to {@code true} on every replayed response (never on an original).
     * Default {@value #DEFAULT_REPLAYED_HEADER_NAME}.
     *
     * @param replayedHeaderName a header name
     */
    public void setReplayedHeaderName(String replayedHeaderName) {
        this.replayedHeaderName = Checks.headerName(replayedHeaderName, PREFIX + ".replayed-header-name");
    }

    @Override
    public List<String> getIgnoredJsonPointers() {
        return ignoredJsonPointers;
    }

    /**
     * JSON Pointers (RFC 6901) of body members left out of every JSON fingerprint, e.g.
     * {@code /metadata/client_timestamp}. Default none.
     *
     * @param ignoredJsonPointers pointers, each empty or starting with {@code /}
     */
    public void setIgnoredJsonPointers(List<String> ignoredJsonPointers) {
        this.ignoredJsonPointers = requirePointers(ignoredJsonPointers, PREFIX + ".ignored-json-pointers");
    }

    @Override
    public List<String> getFingerprintHeaders() {
        return fingerprintHeaders;
    }

    /**
     * Request headers whose values are part of every fingerprint (e.g. {@code Accept}).
     * Default none.
     *
     * @param fingerprintHeaders header names
     */
    public void setFingerprintHeaders(List<String> fingerprintHeaders) {
        for (String h : fingerprintHeaders) {
            Checks.headerName(h, PREFIX + ".fingerprint-headers");
        }
        this.fingerprintHeaders = List.copyOf(fingerprintHeaders);
    }

    @Override
    public Set<Integer> getReleaseStatuses() {
        return releaseStatuses;
    }

    /**
     * Statuses below 500 that release the key instead of being stored, so a retry runs the
     * handler again. 5xx results always release. Default 408, 425 and 429: statuses that tell
     * the client to retry later (a rate limiter's 429, say), which a stored copy would answer
     * forever; every other 2xx, 3xx and 4xx result is stored and replayed. Set an empty list to
     * store those too.
     *
     * @param releaseStatuses status codes 100-499
     */
    public void setReleaseStatuses(Collection<Integer> releaseStatuses) {
        for (Integer s : releaseStatuses) {
            if (s == null || s < 100 || s > 499) {
                throw new IllegalArgumentException(PREFIX + ".release-statuses must hold statuses 100-499, found " + s);
            }
        }
        this.releaseStatuses = Set.copyOf(releaseStatuses);
    }

    @Override
    public boolean isReplayHandledExceptions() {
        return replayHandledExceptions;
    }

    /**
     * Store and replay 2xx-4xx responses that an exception handler ({@code @Error},
     * {@code ExceptionHandler}) made from an exception the handler threw, as if the handler had
     * returned them; for applications that signal business errors (card declined, refund too
     * large) by throwing. Default {@value #DEFAULT_REPLAY_HANDLED_EXCEPTIONS}: any exception
     * releases the key, so a retry runs the handler again. Unhandled exceptions (500) always
     * release.
     *
     * @param replayHandledExceptions whether handled exceptions are stored
     */
    public void setReplayHandledExceptions(boolean replayHandledExceptions) {
        this.replayHandledExceptions = replayHandledExceptions;
    }

    @Override
    public boolean isTransactional() {
        return transactional;
    }

    /**
     * Transactional mode (CONTRACT S18) for every idempotent route: acquire, the handler and
     * the completion run in one database transaction of the store, so the record and the
     * handler's own writes on that database commit or roll back together. A handler that fails
     * (5xx, exception) rolls back both; a failed commit is answered 503
     * {@code idempotency-store-unavailable} instead of the handler's response. Needs a store that
     * implements {@link dev.idempotency.server.store.TransactionalIdempotencyStore} (the
     * PostgreSQL store); with another store the application fails at startup. Routes can also
     * opt in one by one with {@code @Idempotent(transactional = true)}. Default
     * {@value #DEFAULT_TRANSACTIONAL}.
     *
     * @param transactional whether every idempotent route runs in transactional mode
     */
    public void setTransactional(boolean transactional) {
        this.transactional = transactional;
    }

    @Override
    public URI getContractUrl() {
        return contractUrl;
    }

    /**
     * The published contract page. Problem {@code type}s are this URL plus {@code #} and the
     * problem code, and every problem carries {@code Link: <url>; rel="describedby"}. Default
     * {@value #DEFAULT_CONTRACT_PAGE}, the published contract, which has an anchor for every
     * code. An API that publishes its own copy of the contract points this at that copy.
     *
     * @param contractUrl an absolute URI without a fragment
     */
    public void setContractUrl(URI contractUrl) {
        if (!contractUrl.isAbsolute() || contractUrl.getFragment() != null) {
            throw new IllegalArgumentException(PREFIX + ".contract-url must be an absolute URI without a fragment, was "
                + contractUrl);
        }
        this.contractUrl = contractUrl;
    }

    @Override
    public String getAnonymousScope() {
        return anonymousScope;
    }

    /**
     * The caller identity of requests that neither a {@link CallerIdentityResolver} nor an
     * authenticated principal identifies. All such callers share one scope. Default
     * {@value #DEFAULT_ANONYMOUS_SCOPE}.
     *
     * @param anonymousScope a non-empty name
     */
    public void setAnonymousScope(String anonymousScope) {
        if (anonymousScope == null || anonymousScope.isBlank()) {
            throw new IllegalArgumentException(PREFIX + ".anonymous-scope must not be blank");
        }
        this.anonymousScope = anonymousScope;
    }

    @Override
    public Duration getStoreUnavailableRetryAfter() {
        return storeUnavailableRetryAfter;
    }

    /**
     * The {@code Retry-After} sent with 503 {@code idempotency-store-unavailable}. Rounded up
     * to whole seconds, at least 1. Default 2s.
     *
     * @param storeUnavailableRetryAfter a positive duration
     */
    public void setStoreUnavailableRetryAfter(Duration storeUnavailableRetryAfter) {
        this.storeUnavailableRetryAfter = Checks.positive(storeUnavailableRetryAfter, PREFIX + ".store-unavailable-retry-after");
    }

    @Override
    public Duration getInFlightRetryAfterMax() {
        return inFlightRetryAfterMax;
    }

    /**
     * The largest {@code Retry-After} sent with 409 {@code idempotency-request-in-progress}. The
     * header is the time the original probably still needs (how long the route usually takes,
     * as the filter has seen it run, minus how long the original has run; before it has seen
     * the route run, the remaining lease), capped by this. Default 5s.
     *
     * @param inFlightRetryAfterMax a positive duration
     */
    public void setInFlightRetryAfterMax(Duration inFlightRetryAfterMax) {
        this.inFlightRetryAfterMax = Checks.positive(inFlightRetryAfterMax, PREFIX + ".in-flight-retry-after-max");
    }

    @Override
    public int getStoreCircuitFailures() {
        return storeCircuitFailures;
    }

    /**
     * How many store calls in a row must fail before the store counts as down: new keys are then
     * answered 503 {@code idempotency-store-unavailable} at once, instead of each waiting for the
     * store's own timeout, until a probe finds the store back. {@code 0} switches the circuit off.
     * The in-memory store has none. Default {@value #DEFAULT_STORE_CIRCUIT_FAILURES}.
     *
     * @param storeCircuitFailures at least 0
     */
    public void setStoreCircuitFailures(int storeCircuitFailures) {
        this.storeCircuitFailures = Checks.atLeast(storeCircuitFailures, 0, PREFIX + ".store-circuit-failures");
    }

    @Override
    public Duration getStoreCircuitProbeInterval() {
        return storeCircuitProbeInterval;
    }

    /**
     * While the store counts as down, one new key every this often goes to the store as a probe;
     * its success ends the outage for everyone. The 503s of the outage say this in their
     * {@code Retry-After} (whole seconds, at least 1). Default 500ms.
     *
     * @param storeCircuitProbeInterval a positive duration
     */
    public void setStoreCircuitProbeInterval(Duration storeCircuitProbeInterval) {
        this.storeCircuitProbeInterval = Checks.positive(storeCircuitProbeInterval, PREFIX + ".store-circuit-probe-interval");
    }

    @Override
    public Duration getInFlightRetryAfterMin() {
        return inFlightRetryAfterMin;
    }

    /**
     * The smallest {@code Retry-After} sent with 409 {@code idempotency-request-in-progress}, e.g.
     * to keep clients of a fast operation from polling every second. The header is in whole
     * seconds, so anything up to 1s means 1. At most {@code in-flight-retry-after-max}. Default 1s.
     *
     * @param inFlightRetryAfterMin a positive duration
     */
    public void setInFlightRetryAfterMin(Duration inFlightRetryAfterMin) {
        this.inFlightRetryAfterMin = Checks.positive(inFlightRetryAfterMin, PREFIX + ".in-flight-retry-after-min");
    }

    /**
     * Checks ignored JSON Pointers, for this class's setter and for {@code @Idempotent}'s member
     * (validated by the HTTP adapter at startup). Not an API.
     *
     * @return {@code pointers} copied, when each is empty or starts with {@code /}; else an exception naming {@code setting}
     */
    @Internal
    public static List<String> requirePointers(List<String> pointers, String setting) {
        for (String p : pointers) {
            if (p == null || (!p.isEmpty() && p.charAt(0) != '/')) {
                throw new IllegalArgumentException(setting + " must hold JSON Pointers (empty or starting with /), found " + p);
            }
        }
        return List.copyOf(pointers);
    }

    private static Set<String> lowerCase(Collection<String> names) {
        Set<String> lower = new LinkedHashSet<>();
        for (String n : names) {
            lower.add(n.trim().toLowerCase(Locale.ROOT));
        }
        return Set.copyOf(lower);
    }
}
