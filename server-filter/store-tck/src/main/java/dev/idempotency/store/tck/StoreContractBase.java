package dev.idempotency.store.tck;

import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import org.junit.jupiter.api.BeforeEach;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What every case of the store contract shares: the store under test on a {@link MutableClock},
 * fresh random keys, and the SPI's calls waited for with a timeout, so a store whose stage never
 * completes fails the suite instead of hanging it. Extend {@link IdempotencyStoreContractTest}.
 */
public abstract class StoreContractBase {


    protected static final Duration LEASE = Duration.ofSeconds(30);
    protected static final Duration RETENTION = Duration.ofHours(24);

    protected MutableClock clock;
    protected IdempotencyStore store;

    /**
     * @param clock the time source the store must use
     * @return the store under test, empty or holding only records of other keys
     */
    protected abstract IdempotencyStore store(MutableClock clock);

    /** @return how many threads race for one key in the race of {@code IdempotencyStoreContractTest} */
    protected int racingThreads() {
        return 64;
    }

    @BeforeEach
    void createStore() {
        clock = new MutableClock();
        store = store(clock);
    }

    protected static String newKey() {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256")
                .digest(UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A fingerprint shaped like the filter's: a version byte, then 32 bytes of SHA-256. */
    protected static byte[] fingerprint(String text) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            byte[] fp = new byte[hash.length + 1];
            fp[0] = 2;
            System.arraycopy(hash, 0, fp, 1, hash.length);
            return fp;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link IdempotencyStore#acquire}, waited for. */
    protected AcquireResult acquire(String key, byte[] fingerprint, Duration lease) {
        return join(store.acquire(key, fingerprint, lease));
    }

    /** {@link IdempotencyStore#complete}, waited for. */
    protected boolean complete(String key, long token, StoredResponse response, Duration retention) {
        return join(store.complete(key, token, response, retention));
    }

    /** {@link IdempotencyStore#release}, waited for. */
    protected boolean release(String key, long token) {
        return join(store.release(key, token));
    }

    /** {@link IdempotencyStore#renew}, waited for. */
    protected boolean renew(String key, long token, Duration lease) {
        return join(store.renew(key, token, lease));
    }

    /** Waits at most 30 s for {@code stage}; its failure is rethrown unwrapped. */
    protected static <T> T join(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError("the store's stage did not complete within 30 s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    protected static StoredResponse response(int status, String body) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/json"));
        headers.put("Location", List.of("/payments/1"));
        return new StoredResponse(status, headers, body.getBytes(StandardCharsets.UTF_8), false);
    }

    protected long acquired(String key, byte[] fp) {
        AcquireResult r = acquire(key, fp, LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) r).fencingToken();
    }

    protected StoreInspection inspection() {
        assumeTrue(store instanceof StoreInspection, "the store offers no StoreInspection (optional, CONTRACT O3)");
        return (StoreInspection) store;
    }

    // ---- durable steps (CONTRACT S23) ----

    protected static final Duration KEEP = RETENTION.plus(LEASE);

    /** {@link IdempotencyStore#recordStep}, waited for. */
    protected boolean recordStep(String key, long token, String step, byte[] result) {
        return join(store.recordStep(key, token, step, result, KEEP));
    }

    /** {@link IdempotencyStore#steps}, waited for, as strings of their bytes. */
    protected Map<String, byte[]> steps(String key) {
        return join(store.steps(key));
    }

    protected static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
