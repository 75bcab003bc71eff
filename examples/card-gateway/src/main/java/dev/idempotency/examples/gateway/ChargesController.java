package dev.idempotency.examples.gateway;

import dev.idempotency.server.Idempotent;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Post;
import io.micronaut.serde.annotation.Serdeable;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A card gateway, as small as it can be: {@code POST /charges} charges a card once per
 * Idempotency-Key (the filter replays the charge to every retry), and {@code GET /charges/stats}
 * says how many charges it made, in all and per payment, which is how the example proves that a
 * chain of retried calls charged each payment once.
 */
@Controller("/charges")
final class ChargesController {

    private final AtomicLong charges = new AtomicLong();
    private final Map<String, AtomicLong> perPayment = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> keys = new ConcurrentHashMap<>();

    /**
     * A charge to make.
     *
     * @param payment  the payment it is for
     * @param amount   in minor units
     * @param currency ISO 4217
     */
    @Serdeable
    record ChargeRequest(String payment, long amount, String currency) {
    }

    /**
     * A charge made.
     *
     * @param id       the charge's id
     * @param payment  the payment it is for
     * @param amount   in minor units
     * @param currency ISO 4217
     */
    @Serdeable
    record Charge(String id, String payment, long amount, String currency) {
    }

    /**
     * The charges made so far.
     *
     * @param charges    in all
     * @param keys       distinct Idempotency-Keys that ran a charge
     * @param perPayment charges by payment
     */
    @Serdeable
    record Stats(long charges, long keys, Map<String, Long> perPayment) {
    }

    @Post
    @Idempotent
    HttpResponse<Charge> charge(@Body ChargeRequest request, @Header("Idempotency-Key") String key) {
        long n = charges.incrementAndGet();
        perPayment.computeIfAbsent(request.payment(), p -> new AtomicLong()).incrementAndGet();
        keys.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
        Charge charge = new Charge("ch_" + n, request.payment(), request.amount(), request.currency());
        return HttpResponse.created(charge, URI.create("/charges/" + charge.id()));
    }

    @Get("/stats")
    Stats stats() {
        Map<String, Long> counts = new java.util.TreeMap<>();
        perPayment.forEach((p, n) -> counts.put(p, n.get()));
        return new Stats(charges.get(), keys.size(), counts);
    }
}
