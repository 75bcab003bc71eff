package dev.idempotency.interop;

import com.stripe.Stripe;
import com.stripe.exception.ApiConnectionException;
import com.stripe.exception.StripeException;
import com.stripe.model.File;
import com.stripe.net.RequestOptions;
import com.stripe.param.ChargeCreateParams;
import com.stripe.param.FileCreateParams;
import dev.idempotency.server.Idempotent;
import dev.idempotency.testsupport.FaultProxy;
import dev.idempotency.testsupport.Stores;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Part;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.multipart.CompletedFileUpload;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * stripe-java, a client this project did not write, against Stripe-shaped routes under the filter
 * (CONTRACT S4, S7, S9), on every store, through a proxy that loses 30 % of the answers after the
 * server ran, resets 10 % of the connections and delays 5 %. The caller does what Stripe documents
 * for a connection error: it sends the request again with its own key. stripe-java draws a new
 * multipart boundary for every send, so each re-sent upload is framed differently from the one
 * that ran: before multipart bodies were fingerprinted by their parts, 31-33 of 200 uploads were
 * answered 422.
 */
class StripeJavaTest {

    static final String SPEC = "StripeJavaTest";
    /** Each route's handler runs, by operation: a charge's or an upload's key. */
    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    private static final byte[] EVIDENCE = ("%PDF-1.4\n% a receipt, with a line that looks like a boundary\r\n--"
        + "-----------------------------7d\r\n%%EOF").getBytes(StandardCharsets.ISO_8859_1);

    private ApplicationContext app;
    private FaultProxy proxy;

    @BeforeAll
    static void stripe() {
        Stripe.apiKey = "sk_test_interop";
        Stripe.setMaxNetworkRetries(0); // the caller re-sends itself, with its own key
        Stripe.setReadTimeout(10_000);
    }

    @AfterAll
    static void resetStripe() {
        Stripe.overrideApiBase(Stripe.LIVE_API_BASE);
        Stripe.overrideUploadBase(Stripe.UPLOAD_API_BASE);
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (app != null) {
            app.close();
        }
        Stores.removeCreated();
        RUNS.clear();
    }

    private void start(Stores store, long seed) {
        Map<String, Object> p = new HashMap<>(store.properties());
        p.put("spec.name", SPEC);
        p.put("micronaut.server.port", "-1");
        app = ApplicationContext.run(p);
        EmbeddedServer server = app.getBean(EmbeddedServer.class).start();
        proxy = FaultProxy.builder().upstream(server.getPort()).seed(seed).dropResponseProbability(0.3)
            .resetProbability(0.1).delay(Duration.ofMillis(20), 0.05).build().start();
        Stripe.overrideApiBase(proxy.baseUrl());
        Stripe.overrideUploadBase(proxy.baseUrl());
    }

    /** One operation of the caller: the call, sent again with the same key after each connection error or 409. */
    interface Call<T> {
        T send(RequestOptions options) throws StripeException;
    }

    /** What became of the operations. */
    record Outcome(int succeeded, List<String> refused, long attempts) {
    }

    private static <T> Outcome operations(int count, Call<T> call) throws InterruptedException {
        int succeeded = 0;
        long attempts = 0;
        List<String> refused = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            // one key per operation, made before its first call (a real caller stores it with the operation)
            RequestOptions options = RequestOptions.builder().setIdempotencyKey(UUID.randomUUID().toString()).build();
            for (int attempt = 1; ; attempt++) {
                attempts++;
                try {
                    call.send(options); // e.g. Charge.create(params, options) or File.create(params, options)
                    succeeded++;
                    break;
                } catch (ApiConnectionException lost) {
                    // the answer may be lost after the server ran: the same call, with the same key
                    if (attempt == 30) {
                        refused.add("gave up after 30 connection errors: " + lost.getMessage());
                        break;
                    }
                } catch (StripeException e) {
                    if (e.getStatusCode() != null && e.getStatusCode() == 409 && attempt < 30) {
                        Thread.sleep(100); // the original is still running: its answer comes with the key
                        continue;
                    }
                    refused.add(e.getStatusCode() + ": " + e.getMessage());
                    break;
                }
            }
        }
        return new Outcome(succeeded, refused, attempts);
    }

    @ParameterizedTest(name = "S7: {0}: 200 stripe-java uploads re-sent with the caller's key after lost answers: none 422")
    @EnumSource(Stores.class)
    void uploads(Stores store) throws Exception {
        start(store, 67);
        Outcome o = operations(200, options -> File.create(FileCreateParams.builder()
            .setPurpose(FileCreateParams.Purpose.DISPUTE_EVIDENCE)
            .setFile(new ByteArrayInputStream(EVIDENCE)).build(), options));

        assertThat(o.refused()).as("operations refused").isEmpty();
        assertThat(o.succeeded()).isEqualTo(200);
        assertThat(o.attempts()).as("the faults made the caller send again").isGreaterThan(200);
        assertThat(proxy.responsesDropped()).isPositive();
        assertThat(RUNS).hasSize(200).allSatisfy((k, runs) -> assertThat(runs.get()).as(k).isEqualTo(1));
    }

    @ParameterizedTest(name = "S4/S7: {0}: 100 stripe-java charges (form-encoded, a bare-token key) re-sent after lost answers: each once")
    @EnumSource(Stores.class)
    void charges(Stores store) throws Exception {
        start(store, 66);
        ChargeCreateParams params = ChargeCreateParams.builder().setAmount(2000L).setCurrency("usd")
            .setSource("tok_visa").setDescription("order 4711").build();
        Outcome o = operations(100, options -> StripeCharges.charge(params, options.getIdempotencyKey(), 30));

        assertThat(o.refused()).isEmpty();
        assertThat(o.succeeded()).isEqualTo(100);
        assertThat(proxy.responsesDropped()).as("answers lost after the server ran").isPositive();
        assertThat(RUNS).hasSize(100).allSatisfy((k, runs) -> assertThat(runs.get()).as(k).isEqualTo(1));
    }

    /** The two Stripe endpoints stripe-java calls here, answering as Stripe does. */
    @Requires(property = "spec.name", value = SPEC)
    @Controller("/v1")
    static class StripeShapedApi {

        private final AtomicInteger ids = new AtomicInteger();

        @Post(value = "/charges", consumes = MediaType.APPLICATION_FORM_URLENCODED)
        @Idempotent
        HttpResponse<String> charge(@Body Map<String, String> form, io.micronaut.http.HttpRequest<?> request) {
            RUNS.computeIfAbsent(request.getHeaders().get("Idempotency-Key"), k -> new AtomicInteger()).incrementAndGet();
            return HttpResponse.ok("{\"id\":\"ch_" + ids.incrementAndGet() + "\",\"object\":\"charge\",\"amount\":"
                + form.get("amount") + ",\"currency\":\"" + form.get("currency") + "\",\"status\":\"succeeded\",\"paid\":true}")
                .contentType(MediaType.APPLICATION_JSON_TYPE);
        }

        @Post(value = "/files", consumes = MediaType.MULTIPART_FORM_DATA)
        @Idempotent
        HttpResponse<String> file(@Part("purpose") String purpose, @Part("file") CompletedFileUpload file,
                                  io.micronaut.http.HttpRequest<?> request) throws IOException {
            RUNS.computeIfAbsent(request.getHeaders().get("Idempotency-Key"), k -> new AtomicInteger()).incrementAndGet();
            return HttpResponse.ok("{\"id\":\"file_" + ids.incrementAndGet() + "\",\"object\":\"file\",\"purpose\":\""
                + purpose + "\",\"size\":" + file.getBytes().length + ",\"filename\":\"" + file.getFilename() + "\"}")
                .contentType(MediaType.APPLICATION_JSON_TYPE);
        }
    }
}
