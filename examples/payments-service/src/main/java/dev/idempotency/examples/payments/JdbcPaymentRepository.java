package dev.idempotency.examples.payments;

import dev.idempotency.examples.payments.SideEffectLedger.Operation;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.type.Argument;
import io.micronaut.data.exceptions.DataAccessException;
import io.micronaut.json.JsonMapper;
// tag::transactional-imports[]
import io.micronaut.transaction.annotation.Transactional;
// end::transactional-imports[]
import jakarta.inject.Singleton;

// tag::transactional-imports[]
import javax.sql.DataSource;
// end::transactional-imports[]
import java.io.IOException;
// tag::transactional-imports[]
import java.sql.Connection;
import java.sql.PreparedStatement;
// end::transactional-imports[]
import java.sql.ResultSet;
// tag::transactional-imports[]
import java.sql.SQLException;
// end::transactional-imports[]
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The {@code postgres} environment's business storage: plain JDBC on the application's
 * {@link DataSource} (tables in {@link PaymentsSchema}).
 *
 * <h2>Transactions</h2>
 * Every method is {@link Transactional} with the default propagation {@code REQUIRED}. The
 * injected {@code DataSource} is Micronaut Data's contextual one: {@code getConnection()} is the
 * current transaction's connection (closing it is a no-op). In transactional mode
 * ({@code idempotency.transactional=true}) the Idempotency-Key filter has already opened a
 * transaction around the handler, holding the idempotency record; these methods join it, so the
 * payment, its refunds, its side-effect row and the idempotency record commit or roll back as one
 * (CONTRACT S18). Called outside such a transaction (e.g. {@code GET /stats}), each method runs in
 * a transaction of its own.
 *
 * <h2>Concurrency</h2>
 * {@link #update} reads the payment with {@code SELECT ... FOR UPDATE}: a second change of the
 * same payment, on this or any other instance, waits until the first one's transaction ends and
 * then sees its result. The side effects are an append-only table, so unrelated operations never
 * wait for each other.
 *
 * <h2>Business refusals</h2>
 * A {@link PaymentException} thrown by an update's change function is raised before anything is
 * written, and is declared {@code noRollbackFor}: it must not mark the filter's transaction
 * rollback-only, because the refusal (a 4xx response) is an outcome the filter stores and replays
 * (CONTRACT S14).
 */
@Singleton
@Requires(env = "postgres")
@Requires(beans = DataSource.class)
@Replaces(InMemoryPaymentRepository.class)
class JdbcPaymentRepository implements PaymentRepository {

    private static final Argument<Map<String, String>> METADATA = Argument.mapOf(String.class, String.class);
    private static final String PAYMENT_COLUMNS = "id, status, amount, currency, amount_captured, amount_refunded,"
        + " description, customer, metadata, created_at, updated_at";

    private final DataSource dataSource;
    private final JsonMapper json;
    private final PaymentsSchema schema;
    private final String payments;
    private final String refunds;
    private final String sideEffects;

    JdbcPaymentRepository(DataSource dataSource, JsonMapper json, PaymentsSchema schema) {
        this.dataSource = dataSource;
        this.json = json;
        this.schema = schema;
        this.payments = schema.table("payments");
        this.refunds = schema.table("payment_refunds");
        this.sideEffects = schema.table("payment_side_effects");
    }

    // tag::transactional-write[]
    @Override
    @Transactional
    public void create(Payment p) {
        schema.ensure();
        try {
            Connection c = dataSource.getConnection();
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + payments + " (" + PAYMENT_COLUMNS
                + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::json, ?, ?)")) {
                ps.setString(1, p.id());
                ps.setString(2, p.status().name());
                ps.setLong(3, p.amount());
                ps.setString(4, p.currency());
                ps.setLong(5, p.amountCaptured());
                ps.setLong(6, p.amountRefunded());
                ps.setString(7, p.description());
                ps.setString(8, p.customer());
                ps.setString(9, metadata(p.metadata()));
                ps.setObject(10, timestamp(p.createdAt()));
                ps.setObject(11, timestamp(p.updatedAt()));
                ps.executeUpdate();
            }
            insertRefunds(c, p.refunds());
            sideEffect(c, Operation.CREATE, p);
        } catch (SQLException e) {
            throw failure("create payment", e);
        }
    }
    // end::transactional-write[]

    @Override
    @Transactional(noRollbackFor = PaymentException.class)
    public Payment update(String id, Operation operation, UnaryOperator<Payment> change) {
        schema.ensure();
        try {
            Connection c = dataSource.getConnection();
            Payment current = load(c, id, true).orElseThrow(() -> PaymentException.notFound(id));
            Payment next = change.apply(current); // may refuse: nothing written yet
            try (PreparedStatement ps = c.prepareStatement("UPDATE " + payments + " SET status = ?,"
                + " amount_captured = ?, amount_refunded = ?, description = ?, metadata = ?::json, updated_at = ?"
                + " WHERE id = ?")) {
                ps.setString(1, next.status().name());
                ps.setLong(2, next.amountCaptured());
                ps.setLong(3, next.amountRefunded());
                ps.setString(4, next.description());
                ps.setString(5, metadata(next.metadata()));
                ps.setObject(6, timestamp(next.updatedAt()));
                ps.setString(7, id);
                if (ps.executeUpdate() != 1) {
                    throw new IllegalStateException("payment " + id + " vanished while locked");
                }
            }
            Set<String> known = new HashSet<>();
            current.refunds().forEach(r -> known.add(r.id()));
            insertRefunds(c, next.refunds().stream().filter(r -> !known.contains(r.id())).toList());
            sideEffect(c, operation, next);
            return next;
        } catch (SQLException e) {
            throw failure("update payment", e);
        }
    }

    @Override
    @Transactional(readOnly = true)
    public Optional<Payment> find(String id) {
        schema.ensure();
        try {
            return load(dataSource.getConnection(), id, false);
        } catch (SQLException e) {
            throw failure("read payment", e);
        }
    }

    @Override
    @Transactional(readOnly = true)
    public List<Payment> list(@Nullable String customer, int limit) {
        schema.ensure();
        try {
            Connection c = dataSource.getConnection();
            List<Payment> page;
            try (PreparedStatement ps = c.prepareStatement("SELECT " + PAYMENT_COLUMNS + " FROM " + payments
                + (customer == null ? "" : " WHERE customer = ?") + " ORDER BY created_at DESC, id LIMIT ?")) {
                int i = 1;
                if (customer != null) {
                    ps.setString(i++, customer);
                }
                ps.setInt(i, limit);
                page = readPayments(c, ps);
            }
            return page;
        } catch (SQLException e) {
            throw failure("list payments", e);
        }
    }

    @Override
    @Transactional(readOnly = true)
    public int count() {
        schema.ensure();
        try (PreparedStatement ps = dataSource.getConnection().prepareStatement("SELECT count(*) FROM " + payments);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw failure("count payments", e);
        }
    }

    @Override
    @Transactional(readOnly = true)
    public Map<Operation, Long> sideEffects() {
        schema.ensure();
        Map<Operation, Long> counts = new EnumMap<>(Operation.class);
        for (Operation op : Operation.values()) {
            counts.put(op, 0L);
        }
        try (PreparedStatement ps = dataSource.getConnection().prepareStatement(
                 "SELECT operation, count(*) FROM " + sideEffects + " GROUP BY operation");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.put(Operation.valueOf(rs.getString(1)), rs.getLong(2));
            }
            return counts;
        } catch (SQLException e) {
            throw failure("count side effects", e);
        }
    }

    private Optional<Payment> load(Connection c, String id, boolean forUpdate) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT " + PAYMENT_COLUMNS + " FROM " + payments
            + " WHERE id = ?" + (forUpdate ? " FOR UPDATE" : ""))) {
            ps.setString(1, id);
            List<Payment> found = readPayments(c, ps);
            return found.stream().findFirst();
        }
    }

    /** Runs {@code ps} (payment rows) and attaches each payment's refunds, oldest first. */
    private List<Payment> readPayments(Connection c, PreparedStatement ps) throws SQLException {
        List<Payment> rows = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                rows.add(new Payment(rs.getString("id"), PaymentStatus.valueOf(rs.getString("status")),
                    rs.getLong("amount"), rs.getString("currency"), rs.getLong("amount_captured"),
                    rs.getLong("amount_refunded"), rs.getString("description"), rs.getString("customer"),
                    metadata(rs.getString("metadata")), List.of(), instant(rs, "created_at"),
                    instant(rs, "updated_at")));
            }
        }
        if (rows.isEmpty()) {
            return rows;
        }
        Map<String, List<Refund>> byPayment = new HashMap<>();
        try (PreparedStatement rps = c.prepareStatement("SELECT id, payment_id, amount, reason, created_at FROM "
            + refunds + " WHERE payment_id = ANY (?) ORDER BY seq")) {
            rps.setArray(1, c.createArrayOf("varchar", rows.stream().map(Payment::id).toArray()));
            try (ResultSet rs = rps.executeQuery()) {
                while (rs.next()) {
                    byPayment.computeIfAbsent(rs.getString("payment_id"), k -> new ArrayList<>())
                        .add(new Refund(rs.getString("id"), rs.getString("payment_id"), rs.getLong("amount"),
                            rs.getString("reason"), instant(rs, "created_at")));
                }
            }
        }
        List<Payment> result = new ArrayList<>(rows.size());
        for (Payment p : rows) {
            List<Refund> rs = byPayment.getOrDefault(p.id(), List.of());
            result.add(new Payment(p.id(), p.status(), p.amount(), p.currency(), p.amountCaptured(),
                p.amountRefunded(), p.description(), p.customer(), p.metadata(), List.copyOf(rs), p.createdAt(),
                p.updatedAt()));
        }
        return result;
    }

    private void insertRefunds(Connection c, List<Refund> added) throws SQLException {
        if (added.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + refunds
            + " (id, payment_id, amount, reason, created_at) VALUES (?, ?, ?, ?, ?)")) {
            for (Refund r : added) {
                ps.setString(1, r.id());
                ps.setString(2, r.paymentId());
                ps.setLong(3, r.amount());
                if (r.reason() == null) {
                    ps.setNull(4, Types.VARCHAR);
                } else {
                    ps.setString(4, r.reason());
                }
                ps.setObject(5, timestamp(r.createdAt()));
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private void sideEffect(Connection c, Operation operation, Payment p) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + sideEffects
            + " (operation, payment_id, created_at) VALUES (?, ?, ?)")) {
            ps.setString(1, operation.name());
            ps.setString(2, p.id());
            ps.setObject(3, timestamp(p.updatedAt()));
            ps.executeUpdate();
        }
    }

    private String metadata(Map<String, String> metadata) {
        try {
            return json.writeValueAsString(metadata);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write metadata as JSON", e);
        }
    }

    private Map<String, String> metadata(String text) {
        try {
            Map<String, String> read = json.readValue(text, METADATA);
            return Collections.unmodifiableMap(new LinkedHashMap<>(read == null ? Map.of() : read));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read metadata JSON " + text, e);
        }
    }

    private static OffsetDateTime timestamp(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        return rs.getObject(column, OffsetDateTime.class).toInstant();
    }

    private static DataAccessException failure(String what, SQLException e) {
        return new DataAccessException("PostgreSQL: cannot " + what + ": " + e.getMessage(), e);
    }
}
