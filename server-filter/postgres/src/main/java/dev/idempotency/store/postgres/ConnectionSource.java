package dev.idempotency.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import com.zaxxer.hikari.pool.HikariPool;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Where the store's autocommitted operations get their connections: the datasource's pool, with
 * the wait for a free connection bounded by the store's own {@code connection-timeout} instead of
 * the pool's (HikariCP's default is 30 s, and the application may need it long for its own
 * work). For a HikariCP pool the bound is exact: the pool's own borrow with that timeout, which
 * leaves no thread waiting behind it. Any other pool is asked plainly and its own timeout
 * applies, which the log says once.
 *
 * <p><b>Recovery.</b> After the database was lost, HikariCP (5.x) opens connections again only
 * on its own schedule, a back-off that doubles from 10 ms to 5 s, so the service would come back
 * up to 5 s after the database. While a HikariCP pool holds no connection at all, this source
 * therefore connects directly, with the pool's URL, credentials and driver, one short-lived
 * connection per operation (at most one per store thread, so never more than the pool's size),
 * until the pool has connections again. The store circuit's probe is such an operation, so the
 * store serves again within one probe interval of the database's return, and the log says when
 * the source goes direct and when it is back on the pool. Each direct call first asks the pool
 * for a connection for one millisecond (a waiter is what makes HikariCP refill, whatever its
 * {@code minimum-idle}), so the pool's timeout metric counts those calls meanwhile.
 *
 * <p>The pool is looked up on first use, not here. Thread-safe.
 */
final class ConnectionSource {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionSource.class);

    private final Supplier<DataSource> dataSource;
    private final long timeoutMillis;
    private volatile Borrow borrow;
    private final AtomicBoolean direct = new AtomicBoolean();

    /** A way to take one connection. */
    @FunctionalInterface
    private interface Borrow {
        Connection take() throws SQLException;
    }

    ConnectionSource(Supplier<DataSource> dataSource, Duration timeout) {
        this.dataSource = dataSource;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
    }

    /**
     * @return a pooled connection, waited for at most {@code connection-timeout} when the pool is
     *     HikariCP's; a direct one while that pool holds none
     * @throws SQLException when none was free in time, or none could be opened
     */
    Connection get() throws SQLException {
        Borrow b = borrow;
        if (b == null) {
            b = resolve();
            borrow = b;
        }
        return b.take();
    }

    private Borrow resolve() {
        DataSource ds = dataSource.get();
        HikariDataSource h = hikari(ds);
        if (h == null) {
            LOG.info("PostgreSQL idempotency store: the datasource is a {}, not a HikariCP pool; the wait for a"
                + " connection is bounded by its own timeout, not by {}.connection-timeout", ds.getClass().getName(),
                PostgresStoreConfigurationProperties.PREFIX);
            return ds::getConnection;
        }
        Borrow around = directConnector(h);
        return () -> {
            HikariPoolMXBean pool = h.getHikariPoolMXBean();
            if (!(pool instanceof HikariPool p)) {
                return h.getConnection(); // not started yet, or closed: the datasource says which
            }
            if (around != null && p.getTotalConnections() == 0) {
                if (direct.compareAndSet(false, true)) {
                    LOG.info("PostgreSQL idempotency store: the pool {} holds no connection; connecting directly"
                        + " until it has connections again", h.getPoolName());
                }
                try {
                    // a waiter is what makes the pool open connections (whatever its minimum-idle)
                    return p.getConnection(1);
                } catch (SQLException none) {
                    return around.take();
                }
            }
            if (direct.compareAndSet(true, false)) {
                LOG.info("PostgreSQL idempotency store: the pool {} has connections again", h.getPoolName());
            }
            return p.getConnection(timeoutMillis);
        };
    }

    /**
     * @return how to open a connection without the pool, as the pool would, or {@code null} when
     *     the pool is configured in a way this cannot repeat (a data source class name, JNDI)
     */
    private Borrow directConnector(HikariDataSource h) {
        String url = h.getJdbcUrl();
        DataSource inner = h.getDataSource();
        if (url == null && inner == null) {
            return null;
        }
        String user = h.getUsername();
        String password = h.getPassword();
        String schema = h.getSchema();
        String catalog = h.getCatalog();
        Properties props = new Properties();
        props.putAll(h.getDataSourceProperties());
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        // an unreachable server must fail within the store's own bound, as a pooled borrow would
        String seconds = Long.toString(Math.max(1, (timeoutMillis + 999) / 1000));
        props.putIfAbsent("connectTimeout", seconds);
        props.putIfAbsent("loginTimeout", seconds);
        return () -> {
            Connection c;
            if (inner != null) {
                c = user == null ? inner.getConnection() : inner.getConnection(user, password);
            } else {
                Driver driver = driver(h.getDriverClassName(), url);
                c = driver.connect(url, props);
                if (c == null) {
                    throw new SQLException("the driver " + driver.getClass().getName() + " does not accept " + url);
                }
            }
            try {
                if (catalog != null) {
                    c.setCatalog(catalog);
                }
                if (schema != null) {
                    c.setSchema(schema);
                }
            } catch (SQLException | RuntimeException e) {
                c.close();
                throw e;
            }
            return c;
        };
    }

    /**
     * A connection of its own, outside the pool, for a session that lives long (the outbox's
     * LISTEN): opened as the pool would open one, or at {@code url} with the pool's credentials.
     * A datasource that is not HikariCP's lends one of its connections, which the caller holds.
     *
     * @param url a JDBC URL to connect to instead of the pool's, or {@code null}
     */
    Connection dedicated(String url) throws SQLException {
        DataSource ds = dataSource.get();
        HikariDataSource h = hikari(ds);
        if (h == null) {
            return ds.getConnection();
        }
        if (url != null) {
            Properties props = new Properties();
            props.putAll(h.getDataSourceProperties());
            if (h.getUsername() != null) {
                props.setProperty("user", h.getUsername());
            }
            if (h.getPassword() != null) {
                props.setProperty("password", h.getPassword());
            }
            props.putIfAbsent("connectTimeout", Long.toString(Math.max(1, (timeoutMillis + 999) / 1000)));
            Connection c = driver(h.getDriverClassName(), url).connect(url, props);
            if (c == null) {
                throw new SQLException("no JDBC driver accepts " + url);
            }
            return c;
        }
        Borrow direct = directConnector(h);
        return direct != null ? direct.take() : h.getConnection();
    }

    private static Driver driver(String className, String url) throws SQLException {
        if (className != null) {
            try {
                ClassLoader loader = Thread.currentThread().getContextClassLoader();
                Class<?> type = Class.forName(className, true,
                    loader != null ? loader : ConnectionSource.class.getClassLoader());
                return (Driver) type.getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new SQLException("cannot load the JDBC driver " + className + ": " + e, e);
            }
        }
        return DriverManager.getDriver(url);
    }

    /**
     * @return the pool when the datasource IS HikariCP's (after Micronaut's transaction-aware
     *     wrapper, which the store removes); a datasource that wraps one (tracing, metrics) is
     *     used as it is, so its wrapper sees every connection
     */
    private static HikariDataSource hikari(DataSource ds) {
        return ds instanceof HikariDataSource h ? h : null;
    }
}
