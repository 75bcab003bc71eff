package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Requires;
import io.micronaut.data.connection.jdbc.exceptions.CannotGetJdbcConnectionException;
import io.micronaut.data.exceptions.DataAccessException;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Error;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;

/**
 * The {@code postgres} environment's answer when the business database cannot be reached (for
 * example {@code GET /payments/{id}} or {@code GET /stats} during an outage): 503 problem
 * {@code storage-unavailable} with {@code Retry-After}, after at most the datasource's 2 s
 * connection timeout, instead of a bare 500. Other database errors stay 500. Writes rarely get
 * here: the Idempotency-Key filter answers 503 itself when the store (the same database) is
 * down, before the handler runs; a write that fails mid-way is rolled back with its record.
 */
@Controller
@Requires(env = "postgres")
final class StorageErrors {

    @Error(global = true, exception = CannotGetJdbcConnectionException.class)
    HttpResponse<?> noConnection(CannotGetJdbcConnectionException e) {
        return answer(e);
    }

    @Error(global = true, exception = DataAccessException.class)
    HttpResponse<?> dataAccess(DataAccessException e) {
        return answer(e);
    }

    private static HttpResponse<?> answer(RuntimeException e) {
        if (!unavailable(e)) {
            return PaymentsController.problem(new PaymentException(500, "internal-error", "Internal error",
                "The request failed on the server."));
        }
        return PaymentsController.problem(new PaymentException(HttpStatus.SERVICE_UNAVAILABLE.getCode(),
                "storage-unavailable", "Payments storage unavailable",
                "The payments database cannot be reached right now. Retry after the time in Retry-After."))
            .header("Retry-After", "2");
    }

    /** A connection that could not be had or was lost (SQLState class 08, server shutting down). */
    static boolean unavailable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLTransientConnectionException || t instanceof SQLNonTransientConnectionException
                || t instanceof SQLRecoverableException) {
                return true;
            }
            if (t instanceof SQLException sql && sql.getSQLState() != null
                && (sql.getSQLState().startsWith("08") || sql.getSQLState().startsWith("57P"))) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }
}
