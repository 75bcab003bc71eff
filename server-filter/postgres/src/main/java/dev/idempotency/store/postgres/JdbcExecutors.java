package dev.idempotency.store.postgres;

import com.zaxxer.hikari.HikariConfigMXBean;
import dev.idempotency.server.store.BoundedExecutor;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.core.propagation.PropagatedContext;

import javax.sql.DataSource;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The threads the PostgreSQL store's blocking JDBC work runs on, so that no caller waits for a
 * connection or a statement: one executor for the autocommitted store operations
 * ({@code idempotency-postgres-N}) and one for transactional mode ({@code idempotency-tx-N},
 * the "transactional island", where a transaction stays on its thread while the handler runs).
 *
 * <p>Each has as many threads as the connection pool has connections (HikariCP's
 * {@code maximum-pool-size}, unless {@code idempotency.store.postgres.threads} says otherwise),
 * so a thread rarely waits for a connection, and a bounded queue
 * ({@code idempotency.store.postgres.queue-capacity}); a call beyond it fails at once with
 * {@link IdempotencyStoreException} (answered 503) instead of queueing without bound. Handing
 * work over never waits (see {@link BoundedExecutor}), so event-loop threads may call. The
 * executors, their size and their daemon threads are settled on first use (the store does it at
 * startup), when the datasource is looked up.
 */
final class JdbcExecutors implements AutoCloseable {

    /** Threads when the pool's size cannot be read. */
    static final int FALLBACK_THREADS = 10;

    private final PostgresStoreConfiguration config;
    private final Supplier<DataSource> dataSource;
    private volatile BoundedExecutor statements;
    private volatile BoundedExecutor island;
    private boolean closed; // guarded by this

    JdbcExecutors(PostgresStoreConfiguration config, Supplier<DataSource> dataSource) {
        this.config = config;
        this.dataSource = dataSource;
    }

    /** Runs a store operation on the statement executor. */
    <T> CompletableFuture<T> statement(String operation, Supplier<T> work) {
        return submit(statements(), operation, work);
    }

    /** Hands {@code task} to the statement executor; {@code false} when it is closed or saturated. */
    boolean tryStatement(Runnable task) {
        return statements().tryExecute(task);
    }

    /**
     * Runs a transaction on the island, in the caller's propagated context (tracing, MDC, the
     * request), so the transaction opened there joins it.
     */
    <T> CompletableFuture<T> transaction(Supplier<T> work) {
        PropagatedContext context = PropagatedContext.getOrEmpty();
        return submit(island(), "transaction", () -> {
            try (PropagatedContext.Scope ignored = context.propagate()) {
                return work.get();
            }
        });
    }

    /** @return how many threads each executor has (settled on first use) */
    int threads() {
        return statements().threads();
    }

    private static <T> CompletableFuture<T> submit(BoundedExecutor executor, String operation, Supplier<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        boolean accepted = executor.tryExecute(() -> {
            try {
                result.complete(work.get());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        if (!accepted) {
            result.completeExceptionally(new IdempotencyStoreException(executor.isClosed()
                ? "PostgreSQL idempotency store is closed"
                : "PostgreSQL idempotency store saturated (" + operation + "): " + executor.describeSaturation()));
        }
        return result;
    }

    private BoundedExecutor statements() {
        BoundedExecutor e = statements;
        if (e == null) {
            start();
            e = statements;
        }
        return e;
    }

    private BoundedExecutor island() {
        BoundedExecutor e = island;
        if (e == null) {
            start();
            e = island;
        }
        return e;
    }

    private synchronized void start() {
        if (statements != null) {
            return;
        }
        int threads = config.getThreads() > 0 ? config.getThreads() : poolSize();
        BoundedExecutor s = new BoundedExecutor("idempotency-postgres-", threads, config.getQueueCapacity());
        BoundedExecutor i = new BoundedExecutor("idempotency-tx-", threads, config.getQueueCapacity());
        if (closed) {
            s.close();
            i.close();
        } else {
            s.start();
            i.start();
        }
        island = i;
        statements = s;
    }

    private int poolSize() {
        try {
            DataSource ds = dataSource.get();
            if (ds.isWrapperFor(HikariConfigMXBean.class)) {
                return Math.max(1, ds.unwrap(HikariConfigMXBean.class).getMaximumPoolSize());
            }
        } catch (SQLException | RuntimeException e) {
            // not a HikariCP pool, or no datasource yet: the fallback size
        }
        return FALLBACK_THREADS;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (statements != null) {
            statements.close();
            island.close();
        }
    }
}
