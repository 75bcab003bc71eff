package dev.idempotency.examples.payments;

import dev.idempotency.examples.payments.SideEffectLedger.Operation;
// tag::step-imports[]
import dev.idempotency.server.IdempotentOperation;
// end::step-imports[]
// tag::publish-imports[]
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutgoingMessage;
// end::publish-imports[]
import io.micronaut.context.annotation.Value;
import io.micronaut.core.annotation.Nullable;
import jakarta.inject.Singleton;

import java.math.BigDecimal;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Currency;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The business logic: validation and state transitions. Each payment is an immutable
 * {@link Payment}; the data lives in a {@link PaymentRepository} (in memory by default, in
 * PostgreSQL in the {@code postgres} environment), which applies every transition atomically,
 * so two captures or two refunds of one payment never interleave: the second sees the first's
 * result (and may be refused because of it). Timestamps come from the injected {@link Clock}.
 *
 * <p>This class knows nothing about Idempotency-Key, nor about transactions: protecting these
 * operations from retries is the filter's job, and the point of the example. In transactional
 * mode the filter's transaction is already open when a handler calls in here, and the
 * repository's writes join it.
 */
@Singleton
final class PaymentService {

    /** The largest amount, in minor units (999,999.99 in a two-decimal currency). */
    static final long MAX_AMOUNT = 99_999_999L;
    static final int MAX_TEXT = 500;
    static final int MAX_METADATA_ENTRIES = 20;
    static final int MAX_METADATA_KEY = 40;

    private static final Pattern CURRENCY = Pattern.compile("[A-Z]{3}");
    private static final Pattern CUSTOMER = Pattern.compile("[A-Za-z0-9_.:-]{1,64}");
    private static final Set<String> ISO_CURRENCIES = Currency.getAvailableCurrencies().stream()
        .map(Currency::getCurrencyCode).collect(Collectors.toUnmodifiableSet());

    private final PaymentRepository payments;
    private final Clock clock;
    @Nullable
    private final TestFailureInjection failureInjection;
    @Nullable
    private final Outbox outbox;
    private final String exchange;
    @Nullable
    private final CardGateway gateway;
    @Nullable
    private final CrashPoints crash;

    /**
     * @param payments         the business storage
     * @param clock            the time source
     * @param failureInjection TEST ONLY, present only in the {@code postgres} environment with
     *                         {@code payments.test.failure-injection=true}; absent otherwise
     * @param outbox           where {@code payment.captured} goes, absent when
     *                         {@code idempotency.outbox.enabled=false}
     * @param exchange         the exchange it goes to ({@code payments.messaging.exchange})
     * @param gateway          the card gateway a capture charges through, absent unless
     *                         {@code payments.gateway.url} is set
     * @param crash            TEST ONLY, absent unless {@code payments.test.crash-at} is set
     */
    PaymentService(PaymentRepository payments, Clock clock, @Nullable TestFailureInjection failureInjection,
                   @Nullable Outbox outbox, @Value("${payments.messaging.exchange:payments}") String exchange,
                   @Nullable CardGateway gateway, @Nullable CrashPoints crash) {
        this.gateway = gateway;
        this.crash = crash;
        this.payments = payments;
        this.clock = clock;
        this.failureInjection = failureInjection;
        this.outbox = outbox;
        this.exchange = exchange;
    }

    Payment create(@Nullable Requests.CreatePayment request) {
        if (request == null) {
            throw PaymentException.invalid("A JSON body is required, e.g. {\"amount\":1000,\"currency\":\"EUR\"}.");
        }
        long amount = amount(request.amount());
        String currency = currency(request.currency());
        String description = text(request.description(), "description");
        String customer = request.customer();
        if (customer != null && !CUSTOMER.matcher(customer).matches()) {
            throw PaymentException.invalid("customer must be 1 to 64 letters, digits or _ . : - characters.");
        }
        Map<String, String> metadata = mergeMetadata(Map.of(), request.metadata());
        Instant now = now();
        Payment payment = new Payment(newId("pay_"), PaymentStatus.AUTHORIZED, amount, currency, 0, 0,
            blankToNull(description), customer, metadata, List.of(), now, now);
        payments.create(payment);
        if (failureInjection != null) {
            failureInjection.afterCreate(payment);
        }
        return payment;
    }

    /**
     * Captures a payment and publishes {@code payment.captured} for the ledger. The message goes
     * through the outbox, with an id derived from the request's Idempotency-Key: with the
     * PostgreSQL store (transactional mode) it commits or rolls back with the capture itself; a
     * broker that is down delays it and fails nothing; a retry of the capture that is replayed
     * publishes nothing, and one that runs again publishes the same message id.
     */
    Payment capture(String id, @Nullable Requests.Capture request) {
        if (gateway != null) {
            chargeCard(id, request);
        }
        Payment captured = captureRow(id, request);
        if (outbox != null) {
            // tag::publish[]
            outbox.publish("payment.captured", OutgoingMessage.json(exchange, "payment.captured",
                    "{\"payment\":\"" + captured.id() + "\",\"amount\":" + captured.amountCaptured()
                        + ",\"currency\":\"" + captured.currency() + "\"}")
                .orderedBy(captured.id()));
            // end::publish[]
        }
        return captured;
    }

    /**
     * Charges the card for a capture through the gateway, once per capture operation. The charge
     * is a durable step (CONTRACT S23): an execution that runs again after a released 5xx, a
     * crash, a takeover or a rolled-back attempt (transactional mode, where the step is recorded
     * beside the attempt's transaction) gets the recorded charge back without calling the
     * gateway. And the call sends a derived key (C11), so a charge whose step was never recorded
     * (the process died right after the gateway answered) is answered by the gateway's replay, not
     * charged twice. A capture the business rules refuse (not authorized, too much) charges nothing.
     */
    // tag::charge-step[]
    private void chargeCard(String id, @Nullable Requests.Capture request) {
        Payment p = payments.find(id).orElse(null);
        Long amount = request == null || request.amount() == null ? null : amount(request.amount());
        if (p == null || p.status() != PaymentStatus.AUTHORIZED || (amount != null && amount > p.amount())) {
            return; // captureRow answers 404, 409 or 422
        }
        long capture = amount == null ? p.amount() : amount;
        // tag::test-crash[]
        crash(CrashPoints.Point.BEFORE_CHARGE);
        // end::test-crash[]
        Supplier<CardGateway.Charge> charge = () -> {
            CardGateway.Charge made = gateway.charge(p, capture);
            // tag::test-crash[]
            crash(CrashPoints.Point.AFTER_CHARGE);
            // end::test-crash[]
            return made;
        };
        Optional<IdempotentOperation> operation = IdempotentOperation.current();
        if (operation.isPresent()) {
            operation.get().step("charge-card", CardGateway.Charge.class, charge);
        } else {
            charge.get();
        }
        // tag::test-crash[]
        crash(CrashPoints.Point.AFTER_CHARGE_RECORDED);
        // end::test-crash[]
    }
    // end::charge-step[]

    private void crash(CrashPoints.Point point) {
        if (crash != null) {
            crash.at(point);
        }
    }

    private Payment captureRow(String id, @Nullable Requests.Capture request) {
        BigDecimal requested = request == null ? null : request.amount();
        Long amount = requested == null ? null : amount(requested);
        return payments.update(id, Operation.CAPTURE, p -> {
            if (p.status() != PaymentStatus.AUTHORIZED) {
                throw new PaymentException(409, "payment-already-captured", "The payment is already captured",
                    "Payment " + id + " was captured already (" + p.amountCaptured() + " " + p.currency()
                        + "); a payment is captured once.");
            }
            long capture = amount == null ? p.amount() : amount;
            if (capture > p.amount()) {
                throw new PaymentException(422, "capture-exceeds-authorized", "The capture exceeds the authorization",
                    "Cannot capture " + capture + " " + p.currency() + ": only " + p.amount() + " is authorized.");
            }
            return new Payment(p.id(), PaymentStatus.CAPTURED, p.amount(), p.currency(), capture, 0,
                p.description(), p.customer(), p.metadata(), p.refunds(), p.createdAt(), now());
        });
    }

    Refund refund(String id, @Nullable Requests.CreateRefund request) {
        BigDecimal requested = request == null ? null : request.amount();
        Long amount = requested == null ? null : amount(requested);
        String reason = blankToNull(text(request == null ? null : request.reason(), "reason"));
        Refund[] created = new Refund[1];
        payments.update(id, Operation.REFUND, p -> {
            if (p.status() == PaymentStatus.AUTHORIZED) {
                throw new PaymentException(409, "payment-not-captured", "The payment is not captured",
                    "Payment " + id + " is only authorized; capture it before refunding.");
            }
            long refund = amount == null ? p.refundable() : amount;
            if (refund > p.refundable() || refund == 0) {
                throw new PaymentException(422, "refund-exceeds-captured", "The refund exceeds the captured amount",
                    "Cannot refund " + refund + " " + p.currency() + ": " + p.refundable() + " is refundable ("
                        + p.amountCaptured() + " captured, " + p.amountRefunded() + " already refunded).");
            }
            Instant now = now();
            Refund r = new Refund(newId("re_"), id, refund, reason, now);
            List<Refund> refunds = new ArrayList<>(p.refunds());
            refunds.add(r);
            long refunded = p.amountRefunded() + refund;
            PaymentStatus status = refunded == p.amountCaptured() ? PaymentStatus.REFUNDED
                : PaymentStatus.PARTIALLY_REFUNDED;
            created[0] = r;
            return new Payment(p.id(), status, p.amount(), p.currency(), p.amountCaptured(), refunded,
                p.description(), p.customer(), p.metadata(), List.copyOf(refunds), p.createdAt(), now);
        });
        return created[0];
    }

    Payment update(String id, @Nullable Requests.UpdatePayment request) {
        if (request == null || (request.description() == null && request.metadata() == null)) {
            throw PaymentException.invalid("Nothing to update: send description and/or metadata.");
        }
        String description = text(request.description(), "description");
        return payments.update(id, Operation.UPDATE, p -> {
            Map<String, String> metadata = mergeMetadata(p.metadata(), request.metadata());
            return new Payment(p.id(), p.status(), p.amount(), p.currency(), p.amountCaptured(), p.amountRefunded(),
                description == null ? p.description() : blankToNull(description), p.customer(), metadata,
                p.refunds(), p.createdAt(), now());
        });
    }

    Optional<Payment> find(String id) {
        return payments.find(id);
    }

    /** @return payments, newest first, optionally of one customer */
    List<Payment> list(@Nullable String customer, int limit) {
        return payments.list(customer, limit);
    }

    /** The injected clock's time, in milliseconds (enough for a payment, shorter to read). */
    private Instant now() {
        return clock.instant().truncatedTo(ChronoUnit.MILLIS);
    }

    private static long amount(@Nullable BigDecimal value) {
        if (value == null) {
            throw PaymentException.invalid("amount is required: a whole number of minor units, e.g. 1000 for 10.00 EUR.");
        }
        BigDecimal v = value.stripTrailingZeros();
        if (v.scale() > 0) {
            throw PaymentException.invalid("amount must be a whole number of minor units (e.g. 1050 for 10.50), not a fraction.");
        }
        if (v.signum() <= 0) {
            throw PaymentException.invalid("amount must be positive.");
        }
        if (v.compareTo(BigDecimal.valueOf(MAX_AMOUNT)) > 0) {
            throw PaymentException.invalid("amount must be at most " + MAX_AMOUNT + " minor units.");
        }
        return v.longValueExact();
    }

    private static String currency(@Nullable String currency) {
        if (currency == null) {
            throw PaymentException.invalid("currency is required: an ISO 4217 code such as EUR or USD.");
        }
        if (!CURRENCY.matcher(currency).matches()) {
            throw PaymentException.invalid("currency must be an ISO 4217 code of three upper-case letters, such as EUR.");
        }
        if (!ISO_CURRENCIES.contains(currency)) {
            throw PaymentException.invalid("currency " + currency + " is not an ISO 4217 currency.");
        }
        return currency;
    }

    private static String text(@Nullable String value, String name) {
        if (value != null && value.length() > MAX_TEXT) {
            throw PaymentException.invalid(name + " must be at most " + MAX_TEXT + " characters.");
        }
        return value;
    }

    /** Stripe-style metadata merge: each key is set, a key with an empty value is removed. */
    private static Map<String, String> mergeMetadata(Map<String, String> current, @Nullable Map<String, String> changes) {
        if (changes == null || changes.isEmpty()) {
            return current;
        }
        Map<String, String> merged = new LinkedHashMap<>(current);
        for (Map.Entry<String, String> e : changes.entrySet()) {
            String key = e.getKey();
            if (key.isEmpty() || key.length() > MAX_METADATA_KEY) {
                throw PaymentException.invalid("metadata keys must be 1 to " + MAX_METADATA_KEY + " characters.");
            }
            String value = e.getValue();
            if (value == null || value.isEmpty()) {
                merged.remove(key);
            } else if (value.length() > MAX_TEXT) {
                throw PaymentException.invalid("metadata values must be at most " + MAX_TEXT + " characters.");
            } else {
                merged.put(key, value);
            }
        }
        if (merged.size() > MAX_METADATA_ENTRIES) {
            throw PaymentException.invalid("metadata may hold at most " + MAX_METADATA_ENTRIES + " keys.");
        }
        return Collections.unmodifiableMap(merged);
    }

    private static String blankToNull(@Nullable String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    private static String newId(String prefix) {
        return prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
    }
}
