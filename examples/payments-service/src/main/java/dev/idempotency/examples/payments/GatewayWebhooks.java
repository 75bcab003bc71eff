// tag::webhooks[]
package dev.idempotency.examples.payments;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Post;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * {@code POST /webhooks/gateway}: the card gateway's events, sent the Standard Webhooks way. A
 * sender redelivers an event until it gets a 2xx, always under the same {@code webhook-id}; that
 * header is the key, so a redelivery is answered from the stored result and the event is handled
 * once. The signature is checked first: a delivery that fails it is answered 401, which this
 * service releases instead of storing ({@code idempotency.release-statuses}), so a forged
 * delivery never takes the id of a genuine one.
 */
@Controller("/webhooks/gateway")
final class GatewayWebhooks {

    private static final Duration TOLERANCE = Duration.ofMinutes(5);

    private final byte[] secret;
    private final Clock clock;
    private final List<String> handled = new CopyOnWriteArrayList<>();

    GatewayWebhooks(@Value("${payments.webhooks.secret}") String secret, Clock clock) {
        this.secret = Base64.getDecoder().decode(secret.startsWith("whsec_") ? secret.substring(6) : secret);
        this.clock = clock;
    }

    @Post(consumes = MediaType.APPLICATION_JSON)
    @Idempotent(keyHeader = "webhook-id")
    HttpResponse<Void> receive(@Header("webhook-id") String id, @Header("webhook-timestamp") String timestamp,
                               @Header("webhook-signature") String signature, @Body String event) {
        if (!signed(id, timestamp, signature, event)) {
            return HttpResponse.unauthorized();
        }
        handled.add(event); // the event's work: here, remembered; in a real service, a status update
        return HttpResponse.noContent();
    }

    /** @return the events handled so far, one per delivery id */
    List<String> handled() {
        return List.copyOf(handled);
    }

    /** Standard Webhooks: HMAC-SHA256 over {@code id.timestamp.body}, any of the space-separated {@code v1,} signatures. */
    boolean signed(String id, String timestamp, String signatures, String body) {
        long seconds;
        try {
            seconds = Long.parseLong(timestamp.trim());
        } catch (NumberFormatException e) {
            return false;
        }
        if (Math.abs(clock.instant().getEpochSecond() - seconds) > TOLERANCE.toSeconds()) {
            return false; // too old or from the future: a replayed capture of an old delivery
        }
        byte[] expected = sign(id, seconds, body);
        for (String s : signatures.trim().split(" ")) {
            if (s.startsWith("v1,")) {
                try {
                    if (MessageDigest.isEqual(expected, Base64.getDecoder().decode(s.substring(3)))) {
                        return true;
                    }
                } catch (IllegalArgumentException notBase64) {
                    // another signature may still match
                }
            }
        }
        return false;
    }

    byte[] sign(String id, long timestamp, String body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return mac.doFinal((id + "." + timestamp + "." + body).getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }
}
// end::webhooks[]
