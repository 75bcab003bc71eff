package dev.idempotency.context;

/**
 * The names the server filter, the client SDK and the consumers write into OpenTelemetry traces
 * (CONTRACT O4): span names, attribute keys, event names and values. They are a published
 * interface, which dashboards and alerts depend on: a name here is never renamed or given another
 * meaning, only added to. Declared once, here, where every module that traces can see them (the
 * client does not depend on the server). The operations guide's "Tracing" section describes each.
 */
public final class TraceNames {

    private TraceNames() {
    }

    // ---- spans

    /** Prefix of the server filter's store-call spans: {@code idempotency.acquire}, {@code .complete}, {@code .release}. */
    public static final String STORE_CALL_PREFIX = "idempotency.";
    /** A durable step's span, a child of the request's span. */
    public static final String STEP_SPAN = "idempotency.step";
    /** The client's span of one logical operation. */
    public static final String CLIENT_OPERATION_SPAN = "idempotency.client.operation";
    /** The client's span of one attempt, a child of the operation's. */
    public static final String CLIENT_ATTEMPT_SPAN = "idempotency.client.attempt";
    /** The client's event on its operation's span for each retry. */
    public static final String RETRY_EVENT = "idempotency.retry";
    /** A consumer's span of one delivery. */
    public static final String CONSUMER_SPAN = "idempotency.consumer.process";

    // ---- attributes

    /** What the filter did, what the client's operation came to, or how a delivery ended. */
    public static final String OUTCOME = "idempotency.outcome";
    /** The first 12 hex digits of the record's key (server, consumer) or of the key's SHA-256 (client); never the key. */
    public static final String KEY_HASH = "idempotency.key_hash";
    /** The route's operation: its name, else method and URI template. */
    public static final String ROUTE = "idempotency.route";
    /** The store: {@code memory}, {@code redis}, {@code postgres} or a store's own class. */
    public static final String STORE = "idempotency.store";
    /** On a replay or a 409: the trace id of the run that did or does the work. */
    public static final String ORIGINAL_TRACE_ID = "idempotency.original_trace_id";
    /** On a span link: why the span links to that run, {@link #LINK_REPLAY_OF} or {@link #LINK_IN_PROGRESS}. */
    public static final String LINK = "idempotency.link";
    /** A durable step's name, or the step a client call's key was derived from. */
    public static final String STEP_NAME = "idempotency.step.name";
    /** Whether a durable step's result came from an earlier execution's record. */
    public static final String STEP_RESUMED = "idempotency.step.resumed";
    /** On a client call made inside a server operation: that operation's {@link #KEY_HASH}. */
    public static final String PARENT_KEY_HASH = "idempotency.parent.key_hash";
    /** The client's operation as its retry log line names it, e.g. {@code POST /payments}. */
    public static final String OPERATION = "idempotency.operation";
    /** How many attempts a client operation sent. */
    public static final String ATTEMPTS = "idempotency.attempts";
    /** An attempt's number (client), or a delivery's (consumer), from 1. */
    public static final String ATTEMPT = "idempotency.attempt";
    /** Whether a client operation's answer was the server's replay. */
    public static final String REPLAYED = "idempotency.replayed";
    /** On a retry event: how long the client waits before the next attempt. */
    public static final String RETRY_WAIT_MS = "idempotency.retry.wait_ms";
    /** On a retry event: why the client retries. */
    public static final String RETRY_REASON = "idempotency.retry.reason";
    /** A consumer's name. */
    public static final String CONSUMER = "idempotency.consumer";
    /** Why a delivery was requeued, retried or dead-lettered. */
    public static final String REASON = "idempotency.reason";

    // ---- values

    /** {@link #LINK} of a replay's link: the linked span executed the operation. */
    public static final String LINK_REPLAY_OF = "replay-of";
    /** {@link #LINK} of a 409's link: the linked span is running the operation. */
    public static final String LINK_IN_PROGRESS = "in-progress";
}
