package dev.idempotency.examples.payments;

/**
 * A request the service refused: bad input (400), an unknown payment (404), a payment in the
 * wrong state (409) or an amount the payment cannot cover (422). The controller turns it into
 * an {@code application/problem+json} response; nothing was changed.
 */
final class PaymentException extends RuntimeException {

    private final int status;
    private final String code;
    private final String title;

    PaymentException(int status, String code, String title, String detail) {
        super(detail, null, false, false);
        this.status = status;
        this.code = code;
        this.title = title;
    }

    static PaymentException invalid(String detail) {
        return new PaymentException(400, "invalid-request", "The request is not valid", detail);
    }

    static PaymentException notFound(String id) {
        return new PaymentException(404, "payment-not-found", "No such payment",
            "There is no payment with id " + id + ".");
    }

    int status() {
        return status;
    }

    String code() {
        return code;
    }

    String title() {
        return title;
    }
}
