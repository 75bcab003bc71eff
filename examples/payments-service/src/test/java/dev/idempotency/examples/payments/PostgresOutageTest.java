package dev.idempotency.examples.payments;

import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code postgres} environment with the database down (a port nobody listens on): the
 * service still starts, writes are refused by the filter with 503 before the handler runs, and
 * reads answer 503 too, each within about the 2 s connection timeout.
 */
@MicronautTest(environments = "postgres", transactional = false) // the requests make their own transactions
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresOutageTest implements TestPropertyProvider {

    @Inject
    EmbeddedServer server;
    @Inject
    JsonMapper json;
    @Inject
    SideEffectLedger ledger;

    @Override
    public Map<String, String> getProperties() {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return Map.of("datasources.default.url", "jdbc:postgresql://127.0.0.1:" + port + "/down",
            "datasources.default.connection-timeout", "1000",
            "idempotency.store.postgres.purge-enabled", "false",
            "micronaut.server.port", "-1");
    }

    @Test
    @DisplayName("S19: database down: a write is 503 idempotency-store-unavailable and its handler does not run;"
        + " a read is 503 storage-unavailable with Retry-After")
    void databaseDown() {
        Api api = new Api(server.getURI(), json);
        long runs = ledger.executions();

        long started = System.nanoTime();
        HttpResponse<byte[]> write = api.post("/payments", Api.newKey(), "{\"amount\":100,\"currency\":\"EUR\"}");
        assertThat(write.statusCode()).isEqualTo(503);
        assertThat(Api.text(write)).contains("\"code\":\"idempotency-store-unavailable\"");
        assertThat(write.headers().firstValue("Retry-After")).isPresent();
        assertThat(ledger.executions()).isEqualTo(runs);

        HttpResponse<byte[]> read = api.get("/payments/pay_0123456789abcdef01234567");
        assertThat(read.statusCode()).isEqualTo(503);
        assertThat(Api.text(read)).contains("\"code\":\"storage-unavailable\"");
        assertThat(read.headers().firstValue("Retry-After")).hasValue("2");
        assertThat(api.get("/stats").statusCode()).isEqualTo(503);
        assertThat((System.nanoTime() - started) / 1_000_000).isLessThan(15_000);
    }
}
