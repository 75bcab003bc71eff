package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.TcpProxy;
import dev.idempotency.testsupport.TestPostgres;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store going away for real (S19): backends killed with {@code pg_terminate_backend}, and the
 * server unreachable (a TCP proxy in front of it taken away and brought back; the shared server
 * itself is never stopped). Requests fail closed with 503 and Retry-After, the handler never runs
 * without a record, service resumes by itself, and records stored before still replay.
 */
class StoreOutageTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static final String APP_NAME = "idem-outage-" + UUID.randomUUID().toString().substring(0, 8);
    private static TcpProxy proxy;
    private static EmbeddedServer server;
    private static Http http;
    private static Api api;

    @Controller("/outage")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "StoreOutageTest")
    static class Api {
        final AtomicInteger executions = new AtomicInteger();

        @Post("/orders")
        @Idempotent
        Map<String, Object> create(@Body Map<String, Object> body) {
            return Map.of("execution", executions.incrementAndGet(), "id", String.valueOf(body.get("id")));
        }
    }

    @BeforeAll
    static void start() throws Exception {
        TestPostgres.Server pg = TestPostgres.server();
        Matcher m = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)(/[^?]*)(\\?.*)?").matcher(pg.url());
        assertThat(m.matches()).as(pg.url()).isTrue();
        proxy = new TcpProxy(m.group(1), Integer.parseInt(m.group(2)));
        String query = m.group(4) == null ? "?" : m.group(4) + "&";
        Map<String, Object> props = TestPostgres.properties(pg, SCHEMA);
        props.put("datasources.default.url", "jdbc:postgresql://127.0.0.1:" + proxy.port() + m.group(3) + query
            + "ApplicationName=" + APP_NAME + "&connectTimeout=2");
        props.put("datasources.default.connection-timeout", "1000");
        props.put("spec.name", "StoreOutageTest");
        server = ApplicationContext.run(EmbeddedServer.class, props);
        http = new Http(server.getURI());
        api = server.getApplicationContext().getBean(Api.class);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
        proxy.close();
        TestPostgres.dropSchema(SCHEMA);
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    private static void assertUnavailable(HttpResponse<byte[]> r) {
        assertThat(r.statusCode()).isEqualTo(503);
        // store-unavailable-retry-after (2 s), or the probe interval (1 s) once the store circuit is open
        assertThat(r.headers().firstValue("Retry-After")).hasValueSatisfying(v -> assertThat(v).isIn("1", "2"));
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(Http.body(r)).contains("\"code\":\"idempotency-store-unavailable\"");
    }

    /** Sends new requests until one runs; every one before it must have been a clean 503. */
    private static HttpResponse<byte[]> untilServed(long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            int before = api.executions.get();
            HttpResponse<byte[]> r = http.postJson("/outage/orders", key(), "{\"id\":\"probe\"}");
            if (r.statusCode() != 503) {
                return r;
            }
            assertUnavailable(r);
            assertThat(api.executions.get()).as("the handler never runs when the store fails").isEqualTo(before);
            assertThat(System.nanoTime()).as("service resumed in time").isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    private static int terminateBackends() throws Exception {
        try (Connection c = TestPostgres.server().connect();
             PreparedStatement ps = c.prepareStatement(
                 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?")) {
            ps.setString(1, APP_NAME);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Test
    @DisplayName("S19: backends killed with pg_terminate_backend: at most clean 503s, then service resumes by itself;"
        + " earlier records still replay")
    void terminatedBackends() throws Exception {
        String before = key();
        HttpResponse<byte[]> stored = http.postJson("/outage/orders", before, "{\"id\":\"a\"}");
        assertThat(stored.statusCode()).isEqualTo(200);

        assertThat(terminateBackends()).isPositive();
        HttpResponse<byte[]> served = untilServed(15);
        assertThat(served.statusCode()).isEqualTo(200);

        HttpResponse<byte[]> replay = http.postJson("/outage/orders", before, "{\"id\":\"a\"}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(stored.body());
    }

    @Test
    @DisplayName("S19: server unreachable: 503 problem with Retry-After, handler not run, nothing lost;"
        + " when it is back the service resumes by itself and earlier records replay")
    void unreachableServer() throws Exception {
        String before = key();
        HttpResponse<byte[]> stored = http.postJson("/outage/orders", before, "{\"id\":\"b\"}");
        assertThat(stored.statusCode()).isEqualTo(200);
        int executions = api.executions.get();

        proxy.stop();
        try {
            String during = key();
            for (int i = 0; i < 3; i++) {
                long start = System.nanoTime();
                assertUnavailable(http.postJson("/outage/orders", during, "{\"id\":\"c\"}"));
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5000);
            }
            assertUnavailable(http.postJson("/outage/orders", before, "{\"id\":\"b\"}"));
            assertThat(api.executions.get()).isEqualTo(executions);
        } finally {
            proxy.start();
        }

        HttpResponse<byte[]> served = untilServed(20);
        assertThat(served.statusCode()).isEqualTo(200);
        HttpResponse<byte[]> replay = http.postJson("/outage/orders", before, "{\"id\":\"b\"}");
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(stored.body());
    }
}
