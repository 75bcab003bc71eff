// tag::own-key[]
package dev.idempotency.interop;

import com.stripe.exception.ApiConnectionException;
import com.stripe.exception.StripeException;
import com.stripe.model.Charge;
import com.stripe.net.RequestOptions;
import com.stripe.param.ChargeCreateParams;

/** A charge through stripe-java with a key of the caller's own, so that its own retries are safe. */
final class StripeCharges {

    private StripeCharges() {
    }

    /**
     * @param key      the operation's key: made once, before its first call, and kept with the
     *                 operation (the order it pays for), so a caller that restarts uses it again
     * @param attempts how many times to send the call at most
     */
    static Charge charge(ChargeCreateParams params, String key, int attempts) throws StripeException {
        RequestOptions options = RequestOptions.builder().setIdempotencyKey(key).build();
        for (int attempt = 1; ; attempt++) {
            try {
                return Charge.create(params, options);
            } catch (ApiConnectionException lost) {
                // the answer may have been lost after the server ran: the same call, with the same key
                if (attempt == attempts) {
                    throw lost;
                }
            }
        }
    }
}
// end::own-key[]
