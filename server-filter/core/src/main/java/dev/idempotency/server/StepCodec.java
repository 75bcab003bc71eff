package dev.idempotency.server;

/**
 * How a durable step's result becomes the bytes its record keeps, and back (CONTRACT S23). The
 * default is the application's JSON mapper (Micronaut serialization); name a codec of your own for
 * results the mapper cannot write, or to keep them smaller. A codec must round-trip: an execution
 * that resumes the step gets {@code decode(encode(result))} where the first one got
 * {@code result}. Implementations must be thread-safe.
 *
 * @param <T> the result type
 */
public interface StepCodec<T> {

    /**
     * @param result what the step's work returned; may be {@code null}
     * @return its bytes
     */
    byte[] encode(T result);

    /**
     * @param bytes what {@link #encode} made, on this or another instance
     * @return the result
     */
    T decode(byte[] bytes);
}
