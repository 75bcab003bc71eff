package dev.idempotency.server.internal.management;

import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.fingerprint.KeyHeader;
import dev.idempotency.server.internal.fingerprint.MalformedKeyException;
import dev.idempotency.server.internal.fingerprint.RequestDigest;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.QueryValue;
import io.micronaut.management.endpoint.annotation.Delete;
import io.micronaut.management.endpoint.annotation.Endpoint;
import io.micronaut.management.endpoint.annotation.Read;
import io.micronaut.management.endpoint.annotation.Selector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;

/**
 * The operator's view of the idempotency store (CONTRACT O3), a Micronaut management endpoint:
 * off by default ({@code endpoints.idempotency.enabled=true} turns it on) and sensitive (with
 * micronaut-security, only for authenticated callers; without it, reachable only with
 * {@code endpoints.idempotency.sensitive=false}, which belongs on a management port nobody else
 * reaches). Never shows a stored body, a fingerprint or a raw key it was not given.
 * <ul>
 *   <li>{@code GET /idempotency}: the store, its records by state and its size;</li>
 *   <li>{@code GET /idempotency/in-progress?olderThan=PT5M&limit=100}: in-progress records whose
 *       holder acquired them longer ago than {@code olderThan}, oldest first, the stuck-key
 *       query of a runbook;</li>
 *   <li>{@code GET /idempotency/record?key=K&scope=S}: one record's state and timing, and the
 *       names and sizes of its durable steps (CONTRACT S23; after a release too, as
 *       {@code "state": "released"}), by the
 *       client's Idempotency-Key and the scope as the filter names it (e.g.
 *       {@code principal:alice POST /payments}); {@code GET /idempotency/<store key>} by the
 *       64-hex store key the other answers show;</li>
 *   <li>{@code DELETE /idempotency/<store key>?fencingToken=N}: releases that in-progress
 *       record, only while it still holds token {@code N} (what the operator saw), so a record
 *       that was completed or taken over meanwhile is left alone; one WARN line on the
 *       {@code dev.idempotency.audit} logger says who released what.</li>
 * </ul>
 * Everything is answered without blocking a thread: the store's inspection is asynchronous.
 */
@Endpoint(id = IdempotencyEndpoint.ID, defaultEnabled = false, defaultSensitive = true)
@Requires(classes = Endpoint.class)
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class IdempotencyEndpoint {

    static final String ID = "idempotency";
    static final int DEFAULT_LIMIT = 100;
    static final int MAX_LIMIT = 1000;
    static final Logger AUDIT = LoggerFactory.getLogger("dev.idempotency.audit");
    private static final Pattern STORE_KEY = Pattern.compile("[0-9a-f]{64}");

    private final IdempotencyStore store;
    private final IdempotencyConfiguration config;
    private final Clock clock;

    IdempotencyEndpoint(IdempotencyStore store, IdempotencyConfiguration config, Clock clock) {
        this.store = store;
        this.config = config;
        this.clock = clock;
    }

    /** @return the store's description, its records by state and its size */
    @Read
    public CompletionStage<MutableHttpResponse<?>> summary() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("store", store.describe());
        if (!(store instanceof StoreInspection inspection)) {
            body.put("inspection", notOffered());
            return CompletableFuture.completedFuture(HttpResponse.ok(body));
        }
        return answer(inspection.counts().thenApply(counts -> {
            body.put("records", counts(counts));
            body.put("size", counts.size());
            return HttpResponse.ok(body);
        }));
    }

    /**
     * @param what       {@code in-progress}, {@code record}, or a 64-hex store key
     * @param olderThan  for {@code in-progress}: the least time since acquisition (default 5 minutes)
     * @param limit      for {@code in-progress}: the most records listed (default 100, at most 1000)
     * @param key        for {@code record}: the client's Idempotency-Key, as sent (a structured
     *                   string, with its quotes) or as its bare value
     * @param scope      for {@code record}: {@code <caller> <METHOD> <route template>}
     * @return the records, or a 400 that says what was wrong
     */
    @Read
    public CompletionStage<MutableHttpResponse<?>> read(@Selector String what,
                                                        @Nullable @QueryValue Duration olderThan,
                                                        @Nullable @QueryValue Integer limit,
                                                        @Nullable @QueryValue String key,
                                                        @Nullable @QueryValue String scope) {
        if (!(store instanceof StoreInspection inspection)) {
            return error(HttpStatus.NOT_IMPLEMENTED, notOffered());
        }
        if (what.equals("in-progress")) {
            Duration age = olderThan == null ? Duration.ofMinutes(5) : olderThan;
            int most = limit == null ? DEFAULT_LIMIT : limit;
            if (age.isNegative() || most < 1 || most > MAX_LIMIT) {
                return error(HttpStatus.BAD_REQUEST, "olderThan must not be negative and limit must be 1 to "
                    + MAX_LIMIT + " (were " + age + " and " + most + ")");
            }
            Instant now = clock.instant();
            return answer(inspection.inProgressStartedBefore(now.minus(age), most).thenApply(records -> {
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("olderThan", age.toString());
                body.put("records", records.stream().map(r -> view(r, now)).toList());
                return HttpResponse.ok(body);
            }));
        }
        String storeKey;
        if (what.equals("record")) {
            if (key == null || scope == null) {
                return error(HttpStatus.BAD_REQUEST, "give both key (the Idempotency-Key) and scope"
                    + " (<caller> <METHOD> <route template>, e.g. principal:alice POST /payments)");
            }
            try {
                storeKey = storeKey(key, scope);
            } catch (IllegalArgumentException e) {
                return error(HttpStatus.BAD_REQUEST, e.getMessage());
            }
        } else if (STORE_KEY.matcher(what).matches()) {
            storeKey = what;
        } else {
            return error(HttpStatus.BAD_REQUEST, "unknown read '" + what + "': use in-progress, record?key=&scope=,"
                + " or a store key of 64 hex digits");
        }
        Instant now = clock.instant();
        return answer(inspection.find(storeKey).thenCombine(steps(storeKey), (found, steps) -> {
            if (found.isPresent()) {
                Map<String, Object> body = view(found.get(), now);
                if (!steps.isEmpty()) {
                    body.put("steps", steps);
                }
                return HttpResponse.ok(body);
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("storeKey", storeKey);
            if (steps.isEmpty()) {
                body.put("error", "no record: the key was never used in this scope, or its record has expired and was"
                    + " deleted");
                return HttpResponse.notFound(body);
            }
            // released after a 5xx (or taken over and gone): the steps wait for the retry (CONTRACT S23)
            body.put("state", "released");
            body.put("steps", steps);
            return HttpResponse.ok(body);
        }));
    }

    /**
     * @return the operation's recorded durable steps (CONTRACT S23): name and size of each result,
     *     never the result; none when the store does not record steps
     */
    private CompletableFuture<List<Map<String, Object>>> steps(String storeKey) {
        CompletionStage<Map<String, byte[]>> stage;
        try {
            stage = store.steps(storeKey);
        } catch (UnsupportedOperationException e) {
            return CompletableFuture.completedFuture(List.of());
        }
        return stage.toCompletableFuture().thenApply(found -> found.entrySet().stream()
            .<Map<String, Object>>map(e -> {
                Map<String, Object> step = new LinkedHashMap<>();
                step.put("name", e.getKey());
                step.put("resultBytes", e.getValue().length);
                return step;
            })
            .toList());
    }

    /**
     * Releases one in-progress record, fenced by the token the operator saw.
     *
     * @param storeKey     the record's store key
     * @param fencingToken the token the record showed
     * @param request      the request, for the audit line
     * @return 200 with the released record; 404, 409 or 400 saying why nothing was released
     */
    @Delete
    public CompletionStage<MutableHttpResponse<?>> release(@Selector String storeKey, @QueryValue long fencingToken,
                                                           HttpRequest<?> request) {
        if (!(store instanceof StoreInspection inspection)) {
            return error(HttpStatus.NOT_IMPLEMENTED, notOffered());
        }
        if (!STORE_KEY.matcher(storeKey).matches()) {
            return error(HttpStatus.BAD_REQUEST, "a store key is 64 lower-case hex digits, was '" + storeKey + "'");
        }
        Instant now = clock.instant();
        return answer(inspection.find(storeKey).thenCompose(found -> {
            if (found.isEmpty()) {
                return CompletableFuture.completedFuture(HttpResponse.notFound(Map.of("storeKey", storeKey,
                    "error", "no record: nothing to release")));
            }
            RecordInfo record = found.get();
            if (record.state() != RecordInfo.State.IN_PROGRESS || record.fencingToken() != fencingToken) {
                return CompletableFuture.completedFuture(conflict(record, now, fencingToken));
            }
            return store.release(storeKey, fencingToken).thenApply(released -> {
                if (!released) {
                    return conflict(record, now, fencingToken);
                }
                AUDIT.warn("idempotency: released in-progress record {} (fencing token {}, acquired {}, running for {})"
                    + " at the request of {} from {}", storeKey, fencingToken, record.startedAt(),
                    Duration.between(record.startedAt(), now), request.getUserPrincipal().map(p -> p.getName())
                        .orElse("an unauthenticated caller"), request.getRemoteAddress());
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("released", true);
                body.put("record", view(record, now));
                return HttpResponse.ok(body);
            });
        }));
    }

    private static MutableHttpResponse<?> conflict(RecordInfo record, Instant now, long fencingToken) {
        String why = record.state() != RecordInfo.State.IN_PROGRESS
            ? "the record is " + state(record.state()) + "; only an in-progress record can be released"
            : "the record is now held with fencing token " + record.fencingToken() + ", not " + fencingToken
                + " (completed, released or taken over since you looked): look at it again";
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("released", false);
        body.put("error", why);
        body.put("record", view(record, now));
        return HttpResponse.status(HttpStatus.CONFLICT).body(body);
    }

    /** The store key of {@code key} in {@code scope}, as the filter computes it for a request. */
    String storeKey(String key, String scope) {
        String[] parts = scope.trim().split(" +");
        if (parts.length < 3) {
            throw new IllegalArgumentException("scope must be '<caller> <METHOD> <route template>', e.g."
                + " 'principal:alice POST /payments', was '" + scope + "'");
        }
        String caller = String.join(" ", List.of(parts).subList(0, parts.length - 2));
        int colon = caller.indexOf(':');
        String kindName = colon < 0 ? caller : caller.substring(0, colon);
        String id = colon < 0 ? "" : caller.substring(colon + 1);
        byte kind = switch (kindName) {
            case "caller" -> RequestDigest.CALLER_RESOLVED;
            case "principal" -> RequestDigest.CALLER_PRINCIPAL;
            case "anonymous" -> RequestDigest.CALLER_ANONYMOUS;
            default -> throw new IllegalArgumentException("the scope's caller must start with caller:, principal: or"
                + " anonymous:, was '" + caller + "'");
        };
        if (kind == RequestDigest.CALLER_ANONYMOUS && id.isEmpty()) {
            id = config.getAnonymousScope();
        }
        String value;
        try {
            value = KeyHeader.parse(key, false).value();
        } catch (MalformedKeyException e) {
            value = key; // the bare value, as the filter read it from the header
        }
        return RequestDigest.begin(kind, id, parts[parts.length - 2], parts[parts.length - 1], value).storeKey();
    }

    private static Map<String, Object> counts(RecordCounts counts) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("inProgress", counts.inProgress());
        m.put("inProgressLeaseExpired", counts.inProgressExpired());
        m.put("completed", counts.completed());
        m.put("expired", counts.expired());
        m.put("total", counts.total());
        m.put("complete", counts.complete());
        return m;
    }

    private static Map<String, Object> view(RecordInfo r, Instant now) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("storeKey", r.storeKey());
        m.put("state", state(r.state()));
        m.put("fencingToken", r.fencingToken());
        m.put("acquiredAt", r.startedAt().toString());
        m.put("ageSeconds", Duration.between(r.startedAt(), now).toMillis() / 1000.0);
        m.put(r.state() == RecordInfo.State.IN_PROGRESS ? "leaseEndsAt" : "expiresAt", r.deadline().toString());
        m.put("expired", r.expired(now));
        if (r.state() == RecordInfo.State.COMPLETED) {
            m.put("status", r.status());
            m.put("bodyBytes", r.bodyBytes() < 0 ? "omitted" : r.bodyBytes());
        }
        return m;
    }

    private static String state(RecordInfo.State state) {
        return switch (state) {
            case IN_PROGRESS -> "in-progress";
            case COMPLETED -> "completed";
            case RELEASED -> "released";
        };
    }

    private String notOffered() {
        return "this store (" + store.getClass().getName() + ") offers no inspection: it does not implement "
            + StoreInspection.class.getName();
    }

    private static CompletionStage<MutableHttpResponse<?>> error(HttpStatus status, String message) {
        return CompletableFuture.completedFuture(HttpResponse.status(status).body(Map.of("error", message)));
    }

    /** A store that cannot answer is a 503 with its reason, as for requests (S19). */
    private static CompletionStage<MutableHttpResponse<?>> answer(CompletionStage<MutableHttpResponse<?>> work) {
        return work.exceptionally(failure -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
            return HttpResponse.status(HttpStatus.SERVICE_UNAVAILABLE).body(Map.of("error", String.valueOf(cause.getMessage())));
        });
    }
}
