package dev.idempotency.benchmarks;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.idempotency.server.internal.fingerprint.RequestFingerprint;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Cost of the request fingerprint (CONTRACT S7) on JSON bodies of 1 KiB, 16 KiB and 256 KiB.
 *
 * <ul>
 *   <li>{@link #fingerprintJson}: {@link RequestFingerprint} with {@code application/json}:
 *       parse, RFC 8785 (JCS) canonical form, SHA-256 of it, then SHA-256 over method, path and
 *       that body digest. This is what the filter pays per request with a JSON body.</li>
 *   <li>{@link #fingerprintRaw}: the same bytes as {@code application/octet-stream}: the
 *       fingerprint's raw path, no parsing; it should be close to the baseline.</li>
 *   <li>{@link #sha256Baseline}: plain {@code MessageDigest.getInstance("SHA-256").digest(body)},
 *       the floor any fingerprint of the body must pay.</li>
 *   <li>{@link #jacksonStreamingParse}: a reference, not a fingerprint: one Jackson streaming pass
 *       that decodes every name, string and number into a {@link Blackhole} and builds and hashes
 *       nothing, i.e. the least any JSON-aware fingerprint must spend on reading the text.</li>
 * </ul>
 * Every variant starts from the same byte array and allocates its digest per call, as the filter
 * does. The defaults below are the settings the figures in README.md were taken with; the heap
 * is fixed so that the 256 KiB case (megabytes of garbage per call) does not spend its warm-up
 * growing the heap.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class FingerprintBenchmark {

    private static final String JSON = "application/json";
    private static final String OCTET_STREAM = "application/octet-stream";
    private static final JsonFactory JSON_FACTORY = JsonFactory.builder().build();

    /** Body size in bytes: 1 KiB, 16 KiB, 256 KiB. */
    @Param({"1024", "16384", "262144"})
    public int size;

    private byte[] body;
    private String method;
    private String path;

    @Setup(Level.Trial)
    public void setUp() {
        body = OrderPayloads.order(size);
        method = "POST";
        path = "/v1/orders";
        // Guard against measuring the wrong thing: if the body did not canonicalize, the
        // fingerprint would silently fall back to the raw bytes. Canonical JSON ignores
        // insignificant whitespace; the raw fallback does not.
        byte[] padded = new byte[body.length + 3];
        padded[0] = ' ';
        padded[1] = '\n';
        System.arraycopy(body, 0, padded, 2, body.length);
        padded[padded.length - 1] = '\t';
        if (!Arrays.equals(fingerprintJson(), RequestFingerprint.of(method, path).compute(JSON, padded, padded.length))) {
            throw new IllegalStateException("the " + size + "-byte body was not canonicalized as JSON");
        }
    }

    @Benchmark
    public byte[] fingerprintJson() {
        return RequestFingerprint.of(method, path).compute(JSON, body, body.length);
    }

    @Benchmark
    public byte[] fingerprintRaw() {
        return RequestFingerprint.of(method, path).compute(OCTET_STREAM, body, body.length);
    }

    @Benchmark
    public byte[] sha256Baseline() throws NoSuchAlgorithmException {
        return MessageDigest.getInstance("SHA-256").digest(body);
    }

    @Benchmark
    public void jacksonStreamingParse(Blackhole bh) throws IOException {
        try (JsonParser p = JSON_FACTORY.createParser(body, 0, body.length)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                switch (t) {
                    case FIELD_NAME -> bh.consume(p.currentName());
                    case VALUE_STRING -> bh.consume(p.getText());
                    case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> bh.consume(p.getDoubleValue());
                    default -> bh.consume(t);
                }
            }
        }
    }
}
