package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.testsupport.ChildJvm;
import dev.idempotency.testsupport.FaultProxy;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.HttpClient;
import io.micronaut.json.JsonMapper;

import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The demo's third part (CONTRACT C11): a chain of two hops. The payments service runs in a JVM
 * of its own and charges each capture through the card gateway (another JVM), with the fault proxy
 * on both hops; the service is killed ({@code Runtime.halt}, as {@code kill -9}) right after its
 * first charge, before it could answer, and started again. The caller's retries finish every
 * capture, and the gateway must have charged each payment once: the charge that the killed process
 * made comes back to the restarted one as the gateway's replay, since both sent the key derived
 * from the capture.
 *
 * <p>The service keeps its payments in PostgreSQL (its {@code postgres} environment, in
 * transactional mode), so that they outlive the crash: the server at {@code POSTGRES_URL}-style
 * settings of the tests ({@code IDEMPOTENCY_TEST_POSTGRES_URL}, default the local one) when it
 * answers, else an embedded one started for the run, in a schema of the run's own, dropped after.
 */
final class ChainCheck {

    private static final int CAPTURES = 5;
    private static final Argument<Map<String, Object>> JSON = Argument.mapOf(String.class, Object.class);

    private ChainCheck() {
    }

    /** @return {@link PaymentsClientDemo#EXIT_OK} when the gateway charged each captured payment exactly once */
    static int run(PrintStream out, long seed) {
        out.println();
        out.println("Across two hops (payments -> card gateway, each a process of its own, faults on both; the"
            + " payments service killed right after its first charge)");
        String schema = null;
        Path dir;
        try {
            dir = Files.createTempDirectory("payments-chain-");
            TestPostgres.Server postgres = TestPostgres.server();
            schema = TestPostgres.newSchema();
            out.printf(Locale.ROOT, "  data              the payments service's records and payments in %s, schema %s"
                + " (dropped after the run)%n", postgres.embedded() ? "an embedded PostgreSQL (" + postgres.url()
                + "; none answered at the configured address)" : "the PostgreSQL at " + postgres.url(), schema);
            return run(out, seed, dir, postgres, schema);
        } catch (IOException | RuntimeException e) {
            out.println("MISMATCH: the chain could not be run: " + DemoConsole.describe(e));
            return PaymentsClientDemo.EXIT_CHECK_FAILED;
        } finally {
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
        }
    }

    private static int run(PrintStream out, long seed, Path dir, TestPostgres.Server postgres, String schema)
        throws IOException {
        int gatewayPort = freePort();
        int paymentsPort = freePort();
        Path marker = dir.resolve("crashed");
        try (ChildJvm gateway = ChildJvm.of("dev.idempotency.examples.gateway.GatewayApplication",
                 List.of("payments-service", "payments-client"), Map.of("micronaut.server.port",
                     Integer.toString(gatewayPort)), gatewayPort, dir.resolve("gateway.log")).start();
             FaultProxy toGateway = FaultProxy.builder().upstream(gatewayPort).seed(seed + 1).resetProbability(0.1)
                 .dropResponseProbability(0.1).build().start();
             FaultProxy toPayments = FaultProxy.builder().upstream(paymentsPort).seed(seed + 2).resetProbability(0.1)
                 .dropResponseProbability(0.1).build().start()) {
            Map<String, String> props = new LinkedHashMap<>();
            TestPostgres.properties(postgres, schema).forEach((k, v) -> props.put(k, String.valueOf(v)));
            props.put("micronaut.environments", "postgres");
            props.put("micronaut.server.port", Integer.toString(paymentsPort));
            props.put("payments.postgres.schema", schema);
            props.put("idempotency.store.postgres.purge-enabled", "false");
            props.put("idempotency.outbox.enabled", "false");
            props.put("idempotency.rabbitmq.enabled", "false");
            props.put("payments.demo.delay-enabled", "false");
            props.put("payments.gateway.url", toGateway.baseUrl());
            // TEST ONLY settings of the example: die once, right after the gateway charged
            props.put("payments.test.crash-at", "after-charge");
            props.put("payments.test.crash-marker", marker.toString());
            try (ChildJvm payments = ChildJvm.of("dev.idempotency.examples.payments.Application",
                     List.of("card-gateway", "payments-client"), props, paymentsPort, dir.resolve("payments.log")).start();
                 HttpClient http = HttpClient.create(new URL(toPayments.baseUrl()))) {
                IdempotentClient client = IdempotentClient.create(http, IdempotentClientConfig.custom().name("chain")
                    .maxAttempts(30).baseDelay(Duration.ofMillis(200)).maxDelay(Duration.ofSeconds(1))
                    .deadline(Duration.ofSeconds(90)).budgetCapacity(1_000).build());
                List<String> ids = new ArrayList<>();
                for (int i = 0; i < CAPTURES; i++) {
                    ids.add((String) client.execute(IdempotentRequest.post("/payments",
                        Map.of("amount", 2000 + 100 * i, "currency", "EUR")), JSON).body().orElseThrow().get("id"));
                }
                long started = System.nanoTime();
                List<CompletableFuture<IdempotentResult<Map<String, Object>>>> captures = new ArrayList<>();
                for (String id : ids) {
                    captures.add(client.executeAsync(IdempotentRequest.post("/payments/" + id + "/capture", null), JSON));
                }
                int exit = payments.awaitExit(Duration.ofSeconds(60));
                long downAt = System.nanoTime();
                if (exit != -1) {
                    payments.start(); // the same command, the same port: the retries find it there
                }
                long upAt = System.nanoTime();
                int captured = 0;
                long attempts = 0;
                for (CompletableFuture<IdempotentResult<Map<String, Object>>> c : captures) {
                    try {
                        IdempotentResult<Map<String, Object>> r = c.get(120, TimeUnit.SECONDS);
                        attempts += r.attempts();
                        if (r.status() == 200 && "CAPTURED".equals(r.body().orElseThrow().get("status"))) {
                            captured++;
                        }
                    } catch (Exception e) {
                        out.println("  a capture failed: " + DemoConsole.describe(e));
                    }
                }
                Map<String, Long> charges = charges(gatewayPort);
                long charged = ids.stream().mapToLong(id -> charges.getOrDefault(id, 0L)).sum();
                boolean once = ids.stream().allMatch(id -> charges.getOrDefault(id, 0L) == 1L);
                out.printf(Locale.ROOT, "  payments service  killed %s (exit %d) %.1f s into the captures, answering"
                    + " again %.1f s later%n", exit == 137 ? "after its first charge" : "NOT as planned", exit,
                    (downAt - started) / 1e9, (upAt - downAt) / 1e9);
                out.printf(Locale.ROOT, "  captures          %d of %d succeeded, in %s: the retries are the"
                    + " faults below and the attempts that met the payments service down or restarting%n", captured,
                    CAPTURES, DemoConsole.plural(attempts, "attempt"));
                out.printf(Locale.ROOT, "  faults            edge->payments %s, %s; payments->gateway %s, %s%n",
                    DemoConsole.plural(toPayments.responsesDropped(), "lost answer"),
                    DemoConsole.plural(toPayments.resets(), "reset"),
                    DemoConsole.plural(toGateway.responsesDropped(), "lost answer"),
                    DemoConsole.plural(toGateway.resets(), "reset"));
                out.printf(Locale.ROOT, "  card gateway      %d charges for %d payments, %d requests received%n", charged,
                    CAPTURES, toGateway.requestsForwarded());
                out.println();
                if (exit == 137 && captured == CAPTURES && once) {
                    out.printf(Locale.ROOT, "OK: gateway charges == payments (%d == %d). The charge the killed process made"
                        + " came back to its restart as the gateway's replay: both sent the key derived from the"
                        + " capture.%n", charged, CAPTURES);
                    return PaymentsClientDemo.EXIT_OK;
                }
                out.printf(Locale.ROOT, "MISMATCH: gateway charges %d for %d payments (%d captured, exit %d); logs in %s%n",
                    charged, CAPTURES, captured, exit, dir);
                return PaymentsClientDemo.EXIT_CHECK_FAILED;
            }
        }
    }

    /** @return the gateway's charges per payment */
    private static Map<String, Long> charges(int port) throws IOException {
        try {
            HttpResponse<byte[]> response = java.net.http.HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/charges/stats")).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
            Map<String, Object> stats = JsonMapper.createDefault().readValue(response.body(), JSON);
            Map<String, Long> counts = new LinkedHashMap<>();
            @SuppressWarnings("unchecked")
            Map<String, Object> perPayment = (Map<String, Object>) stats.get("perPayment");
            perPayment.forEach((id, n) -> counts.put(id, ((Number) n).longValue()));
            return counts;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
