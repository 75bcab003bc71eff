package dev.idempotency.server;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpAttributes;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpRequestWrapper;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.context.ServerRequestContext;
import io.micronaut.http.body.ByteBody;
import io.micronaut.http.filter.ConditionalFilter;
import io.micronaut.http.filter.FilterContinuation;
import io.micronaut.http.filter.ServerFilterPhase;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.web.router.RouteAttributes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static io.micronaut.http.annotation.Filter.MATCH_ALL_PATTERN;

/**
 * Enforces the Idempotency-Key contract (CONTRACT S1-S16, S18-S20, S22) on routes marked
 * {@link Idempotent}, for the configured methods (POST and PATCH by default).
 *
 * <p>For each covered request it parses the key, reads the body (up to the configured cap) to
 * compute the {@link RequestFingerprint}, scopes the key to the caller and the route, and makes
 * one atomic {@link IdempotencyStore#acquire} call. Depending on the answer it runs the handler
 * (renewing the lease while it runs, then storing or releasing the result), replays the stored
 * response byte for byte with {@code Idempotent-Replayed: true}, or rejects the request with a
 * problem response. Other requests pass through untouched.
 *
 * <p>In transactional mode (CONTRACT S18, {@code idempotency.transactional} or
 * {@code @Idempotent(transactional = true)}, with a
 * {@link dev.idempotency.server.store.TransactionalIdempotencyStore}) acquire, the handler and
 * the completion run in one transaction of the store, so the record commits or rolls back with
 * the handler's own writes on that database; a failed handler rolls both back, a failed commit
 * is answered 503 {@code idempotency-store-unavailable}, and no lease is renewed.
 *
 * <p>Runs after {@link ServerFilterPhase#SECURITY}, so the authenticated principal is known,
 * and on the blocking executor, because it waits for the store and for the handler.
 */
@ServerFilter(MATCH_ALL_PATTERN)
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class IdempotencyFilter implements Ordered, ConditionalFilter {

    /** The filter's order: right after the security phase. */
    public static final int ORDER = ServerFilterPhase.SECURITY.after();

    /** The header that marks a replay whose body was not stored. */
    public static final String REPLAY_DETAIL_HEADER = "Idempotency-Replay";

    private static final Logger LOG = LoggerFactory.getLogger(IdempotencyFilter.class);
    private static final long WAIT_POLL_MILLIS = 50;

    private final IdempotencyConfiguration config;
    private final IdempotencyStore store;
    private final RoutePolicies policies;
    private final ResponseCapture capture;
    private final LeaseRenewer renewer;
    private final Problems problems;
    private final IdempotencyMetrics metrics;
    private final IdempotencyScheduler scheduler;
    @Nullable
    private final CallerIdentityResolver callerResolver;

    IdempotencyFilter(IdempotencyConfiguration config, IdempotencyStore store, RoutePolicies policies,
                      ResponseCapture capture, LeaseRenewer renewer, Problems problems, IdempotencyMetrics metrics,
                      IdempotencyScheduler scheduler, @Nullable CallerIdentityResolver callerResolver) {
        this.config = config;
        this.store = store;
        this.policies = policies;
        this.capture = capture;
        this.renewer = renewer;
        this.problems = problems;
        this.metrics = metrics;
        this.scheduler = scheduler;
        this.callerResolver = callerResolver;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public boolean isEnabled(HttpRequest<?> request) {
        return policies.forRequest(request).isPresent();
    }

    /**
     * The filter method; not for direct use.
     *
     * @param request      the request
     * @param continuation the rest of the chain
     * @return the response to send
     */
    @RequestFilter
    @ExecuteOn(TaskExecutors.BLOCKING)
    public HttpResponse<?> filter(HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation) {
        Optional<RoutePolicy> maybePolicy = policies.forRequest(request);
        if (maybePolicy.isEmpty()) {
            return proceedOriginal(continuation);
        }
        RoutePolicy policy = maybePolicy.get();
        List<String> values = request.getHeaders().getAll(config.getHeaderName());
        if (values.isEmpty()) {
            if (!policy.required()) {
                return proceedOriginal(continuation);
            }
            return reject(ProblemCode.KEY_MISSING, "This operation requires an " + config.getHeaderName()
                + " header: generate one unique key (e.g. a UUIDv4) per operation and send it on every retry.");
        }
        if (values.size() > 1) {
            return reject(ProblemCode.KEY_INVALID, "Send exactly one " + config.getHeaderName()
                + " header with one value; this request carried " + values.size() + ".");
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKey.parse(values.get(0), config.isStrict());
        } catch (InvalidIdempotencyKeyException e) {
            return reject(ProblemCode.KEY_INVALID, e.getMessage()
                + ". A key is 1 to 255 printable ASCII characters, sent as a quoted string.");
        }
        Body body;
        try {
            body = readBody(request);
        } catch (BodyTooLarge e) {
            return reject(ProblemCode.BODY_TOO_LARGE, "Idempotent requests may carry at most "
                + config.getMaxRequestBodySize() + " bytes of body.");
        }
        byte[] fingerprint = fingerprint(request, policy, body);
        String storeKey = storeKey(scope(request, policy), key);
        String keyHash = storeKey.substring(0, 12);
        return handle(request, continuation, policy, storeKey, keyHash, fingerprint);
    }

    private HttpResponse<?> handle(HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation,
                                   RoutePolicy policy, String storeKey, String keyHash, byte[] fingerprint) {
        if (policy.transactional()) {
            return handleTransactional(request, continuation, policy, storeKey, keyHash, fingerprint);
        }
        long waitUntil = System.nanoTime() + policy.inFlightWait().toNanos();
        while (true) {
            AcquireResult result;
            try {
                result = timed("acquire", () -> store.acquire(storeKey, fingerprint, policy.lease()));
            } catch (IdempotencyStoreException e) {
                return storeFailure(request, continuation, policy, keyHash, e);
            }
            if (result instanceof AcquireResult.Acquired acquired) {
                return execute(request, continuation, policy, storeKey, keyHash, acquired);
            }
            HttpResponse<?> answer = answer(request, result, keyHash, waitUntil);
            if (answer != null) {
                return answer;
            }
        }
    }

    /**
     * The answer to an acquire that did not acquire: the replay, 422, or 409; {@code null}
     * (after a short sleep) while a route with {@code inFlightWait} should ask again.
     */
    @Nullable
    private HttpResponse<?> answer(HttpRequest<?> request, AcquireResult result, String keyHash, long waitUntil) {
        if (result instanceof AcquireResult.Replay replay) {
            log(Outcome.REPLAYED, keyHash, request);
            return replay(replay.response());
        }
        if (result instanceof AcquireResult.Mismatch) {
            log(Outcome.MISMATCH, keyHash, request);
            return problems.response(ProblemCode.KEY_REUSED, "This " + config.getHeaderName()
                + " was already used with a different request. Use a new key for a new operation;"
                + " retry an operation only with its original payload.");
        }
        AcquireResult.InProgress inProgress = (AcquireResult.InProgress) result;
        long remaining = waitUntil - System.nanoTime();
        if (remaining <= 0) {
            log(Outcome.CONFLICT, keyHash, request);
            return problems.response(ProblemCode.REQUEST_IN_PROGRESS, "The original request with this "
                + config.getHeaderName() + " is still being processed. Retry after the time in Retry-After"
                + " with the same key and payload to get its result.",
                min(inProgress.remainingLease(), config.getInFlightRetryAfterMax()));
        }
        sleep(Math.min(WAIT_POLL_MILLIS, Math.max(1, remaining / 1_000_000)));
        return null;
    }

    /**
     * Transactional mode (CONTRACT S18): each attempt is one store transaction holding acquire,
     * the handler and the completion, so the record and the handler's writes commit or roll back
     * together. The handler runs inside the transaction because the continuation is re-bound
     * with {@link FilterContinuation#request} there: that captures the current
     * {@code PropagatedContext}, which holds the transaction's connection, and the route (with
     * its repositories and {@code @Transactional} methods) runs in it. No lease renewal: the
     * uncommitted record is invisible to other connections. A failed handler is rolled back
     * (the transactional release); a failed commit is answered 503, since nothing was kept.
     */
    private HttpResponse<?> handleTransactional(HttpRequest<?> request,
                                                FilterContinuation<MutableHttpResponse<?>> continuation,
                                                RoutePolicy policy, String storeKey, String keyHash,
                                                byte[] fingerprint) {
        TransactionalIdempotencyStore txStore = (TransactionalIdempotencyStore) store; // checked at startup
        long waitUntil = System.nanoTime() + policy.inFlightWait().toNanos();
        while (true) {
            TransactionalAttempt attempt = new TransactionalAttempt();
            try {
                txStore.inTransaction(tx -> {
                    attemptInTransaction(tx, attempt, request, continuation, policy, storeKey, keyHash, fingerprint);
                    return null;
                });
            } catch (IdempotencyStoreException e) {
                if (!attempt.handlerRan) {
                    return storeFailure(request, continuation, policy, keyHash, e);
                }
                log(Outcome.STORE_ERROR, keyHash, request);
                LOG.error("idempotency transaction failed after the handler ran key={}: its writes and the record"
                    + " were rolled back; answering 503", keyHash, e);
                return storeUnavailable();
            }
            if (attempt.response != null) {
                if (attempt.takeover) {
                    metrics.leaseTakenOver();
                }
                log(Outcome.EXECUTED, keyHash, request);
                return attempt.response;
            }
            HttpResponse<?> answer = answer(request, attempt.result, keyHash, waitUntil);
            if (answer != null) {
                return answer;
            }
        }
    }

    private void attemptInTransaction(TransactionalIdempotencyStore.Transaction tx, TransactionalAttempt attempt,
                                      HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation,
                                      RoutePolicy policy, String storeKey, String keyHash, byte[] fingerprint) {
        AcquireResult result = timed("acquire", () -> tx.acquire(storeKey, fingerprint, policy.lease()));
        if (!(result instanceof AcquireResult.Acquired acquired)) {
            tx.setRollbackOnly(); // nothing of ours to keep
            attempt.result = result;
            return;
        }
        attempt.takeover = acquired.takeover();
        attempt.handlerRan = true;
        MutableHttpResponse<?> response = proceedOriginal(continuation.request(request));
        attempt.response = response;
        if (failed(request, response)) {
            tx.setRollbackOnly();
            return;
        }
        if (tx.isRollbackOnly()) {
            // e.g. a @Transactional method of the handler threw and its exception was handled into this
            // response: its writes cannot commit, so neither can the record
            LOG.warn("idempotency transaction of key={} was marked rollback-only by the handler; its {} response"
                + " is sent but not stored", keyHash, response.code());
            return;
        }
        StoredResponse stored = capture.capture(request, response);
        boolean done = timed("complete", () -> tx.complete(storeKey, acquired.fencingToken(), stored,
            policy.retention()));
        if (!done) {
            // cannot happen while this transaction holds the record; never commit without it
            tx.setRollbackOnly();
            throw new IdempotencyStoreException("the idempotency record vanished inside its own transaction");
        }
    }

    /** What one transactional attempt did; read after its transaction ended. */
    private static final class TransactionalAttempt {
        boolean handlerRan;
        boolean takeover;
        @Nullable
        MutableHttpResponse<?> response;
        @Nullable
        AcquireResult result;
    }

    private HttpResponse<?> execute(HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation,
                                    RoutePolicy policy, String storeKey, String keyHash,
                                    AcquireResult.Acquired acquired) {
        long token = acquired.fencingToken();
        if (acquired.takeover()) {
            metrics.leaseTakenOver();
            LOG.info("idempotency lease taken over key={}: the earlier holder's lease expired", keyHash);
        }
        MutableHttpResponse<?> response;
        try (LeaseRenewer.Renewal ignored = renewer.start(storeKey, token, policy.lease(), keyHash)) {
            response = proceedOriginal(continuation);
        } catch (RuntimeException | Error e) {
            release(storeKey, token, keyHash);
            throw e;
        }
        if (failed(request, response)) {
            release(storeKey, token, keyHash);
            log(Outcome.EXECUTED, keyHash, request);
            return response;
        }
        StoredResponse stored;
        try {
            stored = capture.capture(request, response);
        } catch (RuntimeException e) {
            LOG.error("idempotency could not encode the response of key={}; the key is released", keyHash, e);
            release(storeKey, token, keyHash);
            throw e;
        }
        complete(storeKey, token, stored, policy, keyHash);
        log(Outcome.EXECUTED, keyHash, request);
        return response;
    }

    /** Whether the result releases the key instead of being stored (S14). */
    private boolean failed(HttpRequest<?> request, MutableHttpResponse<?> response) {
        int status = response.code();
        boolean thrown = RouteAttributes.getException(response).isPresent()
            || request.getAttribute(HttpAttributes.EXCEPTION).isPresent();
        return status >= 500 || config.getReleaseStatuses().contains(status)
            || (thrown && !config.isReplayHandledExceptions());
    }

    /** Runs the rest of the chain; an original response never carries the replay marker (S13). */
    private MutableHttpResponse<?> proceedOriginal(FilterContinuation<? extends MutableHttpResponse<?>> continuation) {
        MutableHttpResponse<?> response = continuation.proceed();
        response.getHeaders().remove(config.getReplayedHeaderName());
        return response;
    }

    /**
     * Stores the result. When the store fails, the caller still gets its response at once and
     * the completion is retried in the background with backoff for up to half the lease: a short
     * store outage must not leave the key to expire and the handler to run a second time. The
     * lease holds for those retries only if its last renewal reached the store; when the store
     * was down for longer, another request may take over and these retries are fenced off.
     */
    private void complete(String storeKey, long token, StoredResponse stored, RoutePolicy policy, String keyHash) {
        if (tryComplete(storeKey, token, stored, policy.retention(), keyHash)) {
            return;
        }
        long giveUpAt = System.nanoTime() + policy.lease().toNanos() / 2;
        scheduleCompletionRetry(storeKey, token, stored, policy.retention(), keyHash, 100, giveUpAt);
    }

    private void scheduleCompletionRetry(String storeKey, long token, StoredResponse stored, Duration retention,
                                         String keyHash, long delayMillis, long giveUpAt) {
        if (System.nanoTime() + delayMillis * 1_000_000 > giveUpAt) {
            LOG.error("idempotency completion failed key={}: the result was sent but could not be stored; the key"
                + " stays locked until its lease expires, then a retry runs the handler again", keyHash);
            return;
        }
        scheduler.executor().schedule(() -> {
            if (!tryComplete(storeKey, token, stored, retention, keyHash)) {
                scheduleCompletionRetry(storeKey, token, stored, retention, keyHash, delayMillis * 2, giveUpAt);
            }
        }, delayMillis, TimeUnit.MILLISECONDS);
    }

    /** @return {@code true} when the store answered (stored or fenced), {@code false} when it failed */
    private boolean tryComplete(String storeKey, long token, StoredResponse stored, Duration retention, String keyHash) {
        try {
            boolean done = timed("complete", () -> store.complete(storeKey, token, stored, retention));
            if (!done) {
                metrics.completionFenced();
                LOG.warn("idempotency completion fenced key={}: the lease was taken over by a later request,"
                    + " whose result stands", keyHash);
            }
            return true;
        } catch (RuntimeException e) {
            LOG.warn("idempotency completion failed key={}, will retry: {}", keyHash, e.toString());
            return false;
        }
    }

    private void release(String storeKey, long token, String keyHash) {
        try {
            timed("release", () -> store.release(storeKey, token));
        } catch (RuntimeException e) {
            LOG.error("idempotency release failed key={}: the key stays locked until its lease expires", keyHash, e);
        }
    }

    private HttpResponse<?> storeFailure(HttpRequest<?> request, FilterContinuation<MutableHttpResponse<?>> continuation,
                                         RoutePolicy policy, String keyHash, IdempotencyStoreException e) {
        log(Outcome.STORE_ERROR, keyHash, request);
        if (policy.failOpen()) {
            LOG.error("idempotency store unavailable, FAILING OPEN key={} route={} {}: the handler runs without"
                + " duplicate protection", keyHash, request.getMethodName(), policy.template(), e);
            return proceedOriginal(continuation);
        }
        LOG.error("idempotency store unavailable key={}: answering 503", keyHash, e);
        return storeUnavailable();
    }

    private MutableHttpResponse<byte[]> storeUnavailable() {
        return problems.response(ProblemCode.STORE_UNAVAILABLE, "The server cannot check this request's "
            + config.getHeaderName() + " right now, so it did not run it. Retry after the time in Retry-After"
            + " with the same key.", config.getStoreUnavailableRetryAfter());
    }

    private MutableHttpResponse<byte[]> replay(StoredResponse stored) {
        MutableHttpResponse<byte[]> response = problems.ownResponse(stored.status());
        for (Map.Entry<String, List<String>> h : stored.headers().entrySet()) {
            for (String v : h.getValue()) {
                response.header(h.getKey(), v);
            }
        }
        response.header(config.getReplayedHeaderName(), "true");
        if (stored.bodyOmitted()) {
            response.header(REPLAY_DETAIL_HEADER, "omitted");
            response.body(new byte[0]);
        } else {
            response.body(stored.body());
        }
        return response;
    }

    private MutableHttpResponse<byte[]> reject(ProblemCode code, String detail) {
        metrics.outcome(Outcome.REJECTED);
        return problems.response(code, detail);
    }

    private void log(Outcome outcome, String keyHash, HttpRequest<?> request) {
        metrics.outcome(outcome);
        if (LOG.isDebugEnabled()) {
            LOG.debug("idempotency outcome={} key={} {} {}", outcome.tag, keyHash, request.getMethodName(),
                request.getPath());
        }
    }

    private String scope(HttpRequest<?> request, RoutePolicy policy) {
        String caller = null;
        if (callerResolver != null) {
            caller = callerResolver.resolve(request).map(c -> "caller:" + c).orElse(null);
        }
        if (caller == null) {
            caller = request.getUserPrincipal().map(p -> "principal:" + p.getName())
                .orElse("anonymous:" + config.getAnonymousScope());
        }
        return caller + '\n' + request.getMethodName() + '\n' + policy.template();
    }

    /** A fixed-length store key: hex SHA-256 of the scope and the key, length-prefixed. */
    static String storeKey(String scope, IdempotencyKey key) {
        DigestSink sink = new DigestSink();
        sink.field(scope);
        sink.field(key.value());
        return HexFormat.of().formatHex(sink.finish());
    }

    private byte[] fingerprint(HttpRequest<?> request, RoutePolicy policy, Body body) {
        RequestFingerprint f = RequestFingerprint.of(request.getMethodName(), request.getPath())
            .ignoringJsonPointers(policy.ignoredJsonPointers());
        request.getParameters().forEach((name, vals) -> f.query(name, vals));
        for (String h : policy.fingerprintHeaders()) {
            f.header(h, request.getHeaders().getAll(h));
        }
        return f.sha256(request.getHeaders().get(HttpHeaders.CONTENT_TYPE), body.bytes(), body.length());
    }

    /**
     * The server's own request behind {@code request}: a filter ahead of this one may have
     * replaced it with a wrapper, which has no access to the body bytes.
     */
    static Optional<ServerHttpRequest<?>> serverRequest(HttpRequest<?> request) {
        HttpRequest<?> current = request;
        for (int depth = 0; depth < 16 && current != null; depth++) {
            if (current instanceof ServerHttpRequest<?> server) {
                return Optional.of(server);
            }
            current = current instanceof HttpRequestWrapper<?> wrapper ? wrapper.getDelegate() : null;
        }
        return ServerRequestContext.currentRequest()
            .filter(ServerHttpRequest.class::isInstance)
            .map(r -> (ServerHttpRequest<?>) r);
    }

    /** The request body as read: the first {@code length} bytes of {@code bytes} (no trimming copy). */
    private record Body(byte[] bytes, int length) {
        static final Body EMPTY = new Body(new byte[0], 0);
    }

    private Body readBody(HttpRequest<?> request) throws BodyTooLarge {
        // Never fingerprint an unreadable body as empty: that would replay one payload's result
        // for another. Fail the request instead; this is a server setup problem, not the client's.
        ServerHttpRequest<?> serverRequest = serverRequest(request).orElseThrow(() -> new IllegalStateException(
            "idempotency: cannot read the body of " + request.getClass().getName() + "; a filter ahead of "
                + "IdempotencyFilter (order " + ORDER + ") replaced the server request with one that is neither a "
                + "ServerHttpRequest nor an HttpRequestWrapper around one"));
        int cap = config.getMaxRequestBodySize();
        ByteBody body = serverRequest.byteBody();
        OptionalLong expected = body.expectedLength();
        if (expected.isPresent() && expected.getAsLong() > cap) {
            throw new BodyTooLarge();
        }
        if (expected.isPresent() && expected.getAsLong() == 0) {
            return Body.EMPTY;
        }
        try (InputStream in = body.split(ByteBody.SplitBackpressureMode.FASTEST).toInputStream()) {
            // one spare byte past a known length: the end of the stream is then seen without
            // growing (and copying) a buffer that is already exactly full
            byte[] buf = new byte[(int) Math.min(cap + 1L, expected.isPresent() ? expected.getAsLong() + 1 : 8192)];
            int n = 0;
            while (true) {
                if (n == buf.length) {
                    if (buf.length > cap) {
                        throw new BodyTooLarge();
                    }
                    buf = Arrays.copyOf(buf, (int) Math.min(cap + 1L, buf.length * 2L));
                }
                int r = in.read(buf, n, buf.length - n);
                if (r < 0) {
                    break;
                }
                n += r;
            }
            if (n > cap) {
                throw new BodyTooLarge();
            }
            return new Body(buf, n);
        } catch (IOException e) {
            throw new UncheckedIOException("could not read the request body", e);
        }
    }

    private <T> T timed(String operation, Supplier<T> call) {
        long start = System.nanoTime();
        try {
            T result = call.get();
            metrics.storeLatency(operation, System.nanoTime() - start, false);
            return result;
        } catch (RuntimeException e) {
            metrics.storeLatency(operation, System.nanoTime() - start, true);
            throw e;
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the idempotency store", e);
        }
    }

    private static final class BodyTooLarge extends Exception {
        BodyTooLarge() {
            super(null, null, false, false);
        }
    }
}
