package dev.idempotency.benchmarks.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

import org.junit.jupiter.api.Test;

class WorkFloorFilterTest {

    private static final String ORDER = "{\"amount\":1250,\"currency\":\"EUR\",\"customer\":\"c-1\",\"description\":\"x\"}";

    @Test
    void theWorkFloorRouteAnswersAsTheRouteWithoutAFilterDoes() throws Exception {
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, Map.of(
            "micronaut.server.port", -1,
            "idempotency.store.redis.enabled", "false",
            WorkFloorFilter.MICROS_PROPERTY, "2"))) {
            HttpClient client = HttpClient.newHttpClient();
            for (String path : new String[] {"/echo", "/work-floor/echo"}) {
                HttpResponse<String> response = client.send(HttpRequest.newBuilder(server.getURI().resolve(path))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(ORDER)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(response.statusCode()).as(path).isEqualTo(201);
                assertThat(response.body()).as(path).isEqualTo(ORDER);
            }
        }
    }

    @Test
    void calibratesToAPositiveRateAndRefusesNegativeWork() {
        assertThat(WorkFloorFilter.calibrate()).isPositive();
        assertThatThrownBy(() -> new WorkFloorFilter(-1))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(WorkFloorFilter.MICROS_PROPERTY);
    }
}
