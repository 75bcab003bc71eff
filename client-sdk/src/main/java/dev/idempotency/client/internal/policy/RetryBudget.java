package dev.idempotency.client.internal.policy;

import io.micronaut.core.annotation.Internal;

import java.net.URI;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * A token bucket per target host (CONTRACT C7). It starts full; each retry spends one token;
 * each answer that is not a failure (any status below 500 that is not retried) puts back a
 * fraction of one. When fewer than one token is left, a retry is refused and the operation
 * fails fast after its attempt: first attempts always go out, so the budget refills as soon as
 * the server answers again. Thread-safe.
 */
@Internal
public final class RetryBudget {

    private final double capacity;
    private final double refillPerSuccess;
    private double tokens;

    public RetryBudget(double capacity, double refillPerSuccess) {
        this.capacity = capacity;
        this.refillPerSuccess = refillPerSuccess;
        this.tokens = capacity;
    }

    /** @return {@code true} and one token spent, or {@code false} when the budget is empty */
    public synchronized boolean tryAcquire() {
        if (tokens >= 1.0) {
            tokens -= 1.0;
            return true;
        }
        return false;
    }

    public synchronized void onSuccess() {
        tokens = Math.min(capacity, tokens + refillPerSuccess);
    }

    public synchronized double tokens() {
        return tokens;
    }

    /** The budgets of one client, one per target. */
    public static final class Registry {
        private final ConcurrentMap<String, RetryBudget> budgets = new ConcurrentHashMap<>();
        private final double capacity;
        private final double refillPerSuccess;

        public Registry(double capacity, double refillPerSuccess) {
            this.capacity = capacity;
            this.refillPerSuccess = refillPerSuccess;
        }

        public RetryBudget forTarget(String target) {
            return budgets.computeIfAbsent(target, t -> new RetryBudget(capacity, refillPerSuccess));
        }
    }

    /**
     * @return {@code scheme://host:port} of an absolute URI; for a relative one (sent to the HTTP
     *     client's single base URL) the client's own name stands for its target
     */
    public static String target(URI uri, String clientName) {
        if (uri.isAbsolute() && uri.getHost() != null) {
            String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
            int port = uri.getPort() != -1 ? uri.getPort() : ("https".equals(scheme) ? 443 : 80);
            return scheme + "://" + uri.getHost().toLowerCase(Locale.ROOT) + ":" + port;
        }
        return "client:" + clientName;
    }
}
