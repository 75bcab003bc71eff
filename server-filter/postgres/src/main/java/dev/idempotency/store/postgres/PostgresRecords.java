package dev.idempotency.store.postgres;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;

import java.security.MessageDigest;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A record's row as the store reads and writes it: the response's headers as one {@code text[]}
 * ({@code name, count, value...}, after the reason phrase as {@link #REASON_ENTRY} when the route
 * set its own and the executing run's trace context as {@link #TRACE_ENTRY} when tracing is on),
 * the stored response read back, and what a live record answers an acquire.
 */
final class PostgresRecords {

    private PostgresRecords() {
    }

    /**
     * The array's first entry when the route set a reason phrase of its own: {@code :reason, 1, phrase},
     * then the headers. No header name starts with a colon.
     */
    static final String REASON_ENTRY = ":reason";
    /** The entry of the executing run's {@code traceparent} (CONTRACT O4): {@code :trace, 1, traceparent}, first. */
    static final String TRACE_ENTRY = ":trace";

    /**
     * Headers as {@code name, count, value...} per header, in order, after the reason phrase as
     * {@link #REASON_ENTRY} when the response has one of its own.
     */
    static String[] encodeHeaders(StoredResponse response) {
        List<String> flat = new ArrayList<>();
        if (response.traceparent() != null) {
            flat.add(TRACE_ENTRY);
            flat.add("1");
            flat.add(response.traceparent());
        }
        if (response.reason() != null) {
            flat.add(REASON_ENTRY);
            flat.add("1");
            flat.add(response.reason());
        }
        response.headers().forEach((name, values) -> {
            flat.add(name);
            flat.add(Integer.toString(values.size()));
            flat.addAll(values);
        });
        return flat.toArray(new String[0]);
    }

    /** @throws SQLException for a malformed array, so a bad row is a store failure (503), not a 500 */
    static List<String> headerArray(Array array) throws SQLException {
        try {
            return List.of((String[]) array.getArray());
        } catch (RuntimeException e) {
            throw new SQLException("malformed response_headers in the idempotency record", e);
        }
    }

    /** @return the reason phrase {@link #encodeHeaders} put before the headers, or {@code null} */
    static String decodeReason(List<String> flat) throws SQLException {
        String reason = entry(flat, REASON_ENTRY);
        if (reason != null && !StoredResponse.validReason(reason)) {
            throw new SQLException("malformed reason phrase in the idempotency record's response_headers");
        }
        return reason;
    }

    /** @return the trace context {@link #encodeHeaders} put first, or {@code null} */
    static String decodeTrace(List<String> flat) throws SQLException {
        String trace = entry(flat, TRACE_ENTRY);
        if (trace != null && !StoredResponse.validTraceparent(trace)) {
            throw new SQLException("malformed traceparent in the idempotency record's response_headers");
        }
        return trace;
    }

    /** @return the value of the leading entry {@code name} ({@code name, 1, value}), or {@code null} */
    private static String entry(List<String> flat, String name) throws SQLException {
        for (int i = 0; i + 2 < flat.size() && flat.get(i).startsWith(":"); i += 3) {
            if (flat.get(i).equals(name)) {
                if (!"1".equals(flat.get(i + 1))) {
                    throw new SQLException("malformed " + name + " entry in the idempotency record's response_headers");
                }
                return flat.get(i + 2);
            }
        }
        return null;
    }

    /** @return the trace context an in-progress record keeps in {@code response_headers}, or {@code null} */
    static String inProgressTrace(ResultSet rs) throws SQLException {
        Array headers = rs.getArray("response_headers");
        return headers == null || rs.getBoolean("completed") ? null : decodeTrace(headerArray(headers));
    }

    /** @throws SQLException also for a malformed array, so a bad row is a store failure (503), not a 500 */
    static Map<String, List<String>> decodeHeaders(List<String> flat) throws SQLException {
        try {
            Map<String, List<String>> headers = new LinkedHashMap<>();
            int i = 0;
            while (i < flat.size() && flat.get(i).startsWith(":")) {
                i += 3; // the reason and trace entries, read by decodeReason and decodeTrace
            }
            while (i < flat.size()) {
                int count = Integer.parseInt(flat.get(i + 1));
                headers.put(flat.get(i), flat.subList(i + 2, i + 2 + count));
                i += 2 + count;
            }
            return headers;
        } catch (RuntimeException e) {
            throw new SQLException("malformed response_headers in the idempotency record", e);
        }
    }

    static StoredResponse storedResponse(ResultSet rs) throws SQLException {
        List<String> flat = headerArray(rs.getArray("response_headers"));
        return new StoredResponse(rs.getInt("response_status"), decodeHeaders(flat), rs.getBytes("response_body"),
            rs.getBoolean("body_omitted"), decodeReason(flat), decodeTrace(flat));
    }

    /** The answer for a live record someone else holds or held: mismatch, replay, or in progress. */
    static AcquireResult existing(ResultSet rs, byte[] fingerprint, Instant now, Instant expiresAt)
        throws SQLException {
        if (!MessageDigest.isEqual(rs.getBytes("fingerprint"), fingerprint)) {
            return new AcquireResult.Mismatch();
        }
        if (rs.getBoolean("completed")) {
            return new AcquireResult.Replay(storedResponse(rs));
        }
        return new AcquireResult.InProgress(Duration.between(now, expiresAt), inProgressTrace(rs));
    }
}
