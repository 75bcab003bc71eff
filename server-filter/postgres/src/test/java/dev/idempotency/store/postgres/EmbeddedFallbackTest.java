package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.TestPostgres;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/** The test support never skips: without a reachable server it starts an embedded PostgreSQL. */
class EmbeddedFallbackTest {

    @Test
    @DisplayName("S17 test support: no server at the configured address -> an embedded PostgreSQL answers")
    void fallsBackToEmbedded() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        TestPostgres.Server server = TestPostgres.resolve("jdbc:postgresql://127.0.0.1:" + closedPort + "/test",
            "postgres", "");
        assertThat(server.embedded()).isTrue();
        try (Connection c = server.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT current_setting('server_version_num')::int")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getInt(1)).isGreaterThanOrEqualTo(150000);
        }
    }
}
