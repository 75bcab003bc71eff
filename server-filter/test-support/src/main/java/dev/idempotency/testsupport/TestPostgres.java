package dev.idempotency.testsupport;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The PostgreSQL the tests use: the server at {@code IDEMPOTENCY_TEST_POSTGRES_URL} (default
 * {@code jdbc:postgresql://127.0.0.1:5432/test}, user {@code IDEMPOTENCY_TEST_POSTGRES_USER},
 * default {@code postgres}, password {@code IDEMPOTENCY_TEST_POSTGRES_PASSWORD}) when it answers,
 * otherwise an embedded PostgreSQL (zonky) started once per JVM. Never skips. Each test class
 * works in a schema of its own, dropped afterwards.
 */
public final class TestPostgres {

    /** Where a database answers. */
    public record Server(String url, String user, String password, boolean embedded) {
        public Connection connect() throws SQLException {
            return DriverManager.getConnection(url, user, password);
        }
    }

    private static Server shared;
    private static EmbeddedPostgres embedded;

    private TestPostgres() {
    }

    public static synchronized Server server() {
        if (shared == null) {
            shared = resolve(env("IDEMPOTENCY_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"),
                env("IDEMPOTENCY_TEST_POSTGRES_USER", "postgres"), env("IDEMPOTENCY_TEST_POSTGRES_PASSWORD", ""));
        }
        return shared;
    }

    /** The configured server when it answers within 2 s, else the embedded one. */
    public static Server resolve(String url, String user, String password) {
        Server configured = new Server(url, user, password, false);
        DriverManager.setLoginTimeout(2);
        try (Connection c = configured.connect()) {
            c.isValid(2);
            return configured;
        } catch (SQLException e) {
            System.err.println("[idempotency tests] no PostgreSQL at " + url + " (" + e.getMessage()
                + "); starting an embedded one");
            return embedded();
        }
    }

    public static synchronized Server embedded() {
        if (embedded == null) {
            try {
                embedded = EmbeddedPostgres.builder().start();
            } catch (IOException e) {
                throw new UncheckedIOException("could not start embedded PostgreSQL", e);
            }
            EmbeddedPostgres pg = embedded;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    pg.close();
                } catch (IOException ignored) {
                    // the JVM is going away
                }
            }));
        }
        return new Server(embedded.getJdbcUrl("postgres", "postgres"), "postgres", "", true);
    }

    /** @return a new schema name, unique to this run */
    public static String newSchema() {
        return "idem_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    }

    public static void dropSchema(String schema) {
        execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }

    /**
     * @param sql    a query whose first column of its first row is a count, e.g. {@code SELECT count(*) ...}
     * @param params its string parameters, in order ({@code null} ones are skipped, as are their markers' absence)
     * @return the count, read on a connection of its own
     */
    public static long count(String sql, String... params) {
        try (Connection c = server().connect(); java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
            int i = 1;
            for (String param : params) {
                if (param != null) {
                    ps.setString(i++, param);
                }
            }
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    public static void execute(String sql) {
        try (Connection c = server().connect(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    public static HikariDataSource pool(Server server, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(server.url());
        config.setUsername(server.user());
        config.setPassword(server.password());
        config.setMaximumPoolSize(size);
        config.setConnectionTimeout(2000);
        config.setInitializationFailTimeout(-1);
        return new HikariDataSource(config);
    }

    /** Micronaut properties for a datasource on the test server and the store in {@code schema}. */
    public static Map<String, Object> properties(Server server, String schema) {
        Map<String, Object> p = new HashMap<>();
        p.put("datasources.default.url", server.url());
        p.put("datasources.default.username", server.user());
        p.put("datasources.default.password", server.password());
        p.put("datasources.default.driver-class-name", "org.postgresql.Driver");
        p.put("datasources.default.maximum-pool-size", "8");
        p.put("datasources.default.connection-timeout", "2000");
        p.put("datasources.default.initialization-fail-timeout", "-1");
        p.put("datasources.default.dialect", "POSTGRES");
        p.put("idempotency.store.type", "postgres");
        p.put("idempotency.store.postgres.schema", schema);
        p.put("micronaut.server.port", "-1");
        return p;
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }
}
