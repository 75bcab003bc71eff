package dev.idempotency.server.internal.http;

import io.micronaut.core.annotation.Internal;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpRequestWrapper;
import io.micronaut.http.ServerHttpRequest;
import io.micronaut.http.body.AvailableByteBody;
import io.micronaut.http.body.ByteBody;
import io.micronaut.http.body.CloseableAvailableByteBody;
import io.micronaut.http.context.ServerRequestContext;
import io.micronaut.http.exceptions.BufferLengthExceededException;
import io.micronaut.http.exceptions.ContentLengthExceededException;
import io.micronaut.http.filter.ServerFilterPhase;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.io.EOFException;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Reads a copy of the request body for the fingerprint, without blocking and within the cap
 * (CONTRACT S8): a body that is already buffered (the usual case for small requests) is copied
 * at once; a streamed one is collected from a split of the body as its chunks arrive, and
 * abandoned as soon as it passes the cap, so memory stays bounded by the cap per request. The
 * route still receives the whole body.
 */
@Internal
public final class BodyReader {

    private BodyReader() {
    }

    /** The body as read: the first {@code length} bytes of {@code bytes} (no trimming copy). */
    public record Body(byte[] bytes, int length) {
        static final Body EMPTY = new Body(new byte[0], 0);
    }

    /** The body is larger than the cap; the stage fails with this. */
    public static final class TooLarge extends RuntimeException {
        TooLarge() {
            super(null, null, false, false);
        }
    }

    /**
     * @return the body; failed with {@link TooLarge} past {@code cap} bytes, or with the body
     *     stream's own error
     */
    public static CompletionStage<Body> read(HttpRequest<?> request, int cap) {
        // Never fingerprint an unreadable body as empty: that would replay one payload's result
        // for another. Fail the request instead; this is a server setup problem, not the client's.
        ServerHttpRequest<?> serverRequest = serverRequest(request).orElseThrow(() -> new IllegalStateException(
            "idempotency: cannot read the body of " + request.getClass().getName() + "; a filter ahead of "
                + "IdempotencyFilter (order " + ServerFilterPhase.SECURITY.after() + ") replaced the server request with one that"
                + " is neither a ServerHttpRequest nor an HttpRequestWrapper around one"));
        ByteBody body = serverRequest.byteBody();
        if (body instanceof AvailableByteBody available) {
            long length = available.length();
            if (length > cap) {
                return CompletableFuture.failedFuture(new TooLarge());
            }
            if (length == 0) {
                return CompletableFuture.completedFuture(Body.EMPTY);
            }
            try (CloseableAvailableByteBody copy = available.split()) {
                byte[] bytes = copy.toByteArray();
                return CompletableFuture.completedFuture(new Body(bytes, bytes.length));
            }
        }
        OptionalLong expected = body.expectedLength();
        if (expected.isPresent() && expected.getAsLong() > cap) {
            return CompletableFuture.failedFuture(new TooLarge());
        }
        if (expected.isPresent() && expected.getAsLong() == 0) {
            return CompletableFuture.completedFuture(Body.EMPTY);
        }
        Collector collector = new Collector(cap, expected);
        body.split(ByteBody.SplitBackpressureMode.FASTEST).toByteArrayPublisher().subscribe(collector);
        return collector.result;
    }

    /** Why a body could not be read, which decides the answer and how loudly it is logged. */
    public enum Failure {
        /** Past the cap, ours or the server's own request limit (a compressed body too, as it inflates): 413. */
        TOO_LARGE,
        /** The client went away, or closed its connection before the declared length: nothing is wrong here. */
        ABORTED,
        /** The body does not decompress as its {@code Content-Encoding} says: the client's mistake. */
        NOT_DECODABLE,
        /** Anything else the body stream failed with: worth an operator's look. */
        BROKEN
    }

    /** @return why reading the body failed with {@code failure} */
    public static Failure classify(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof TooLarge || t instanceof ContentLengthExceededException
                || t instanceof BufferLengthExceededException) {
                return Failure.TOO_LARGE;
            }
            if (t instanceof EOFException || t instanceof ClosedChannelException
                || t instanceof IOException && t.getMessage() != null && t.getMessage().contains("Connection reset")) {
                return Failure.ABORTED;
            }
            if (isNettyDecoderFailure(t)) {
                return Failure.NOT_DECODABLE;
            }
        }
        return Failure.BROKEN;
    }

    /** Netty's {@code DecoderException} family (decompression among them), by name: Netty's codecs are not a dependency here. */
    private static boolean isNettyDecoderFailure(Throwable t) {
        for (Class<?> c = t.getClass(); c != null && c != Throwable.class; c = c.getSuperclass()) {
            if (c.getName().equals("io.netty.handler.codec.DecoderException")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The server's own request behind {@code request}: a filter ahead of this one may have
     * replaced it with a wrapper, which has no access to the body bytes.
     */
    public static Optional<ServerHttpRequest<?>> serverRequest(HttpRequest<?> request) {
        HttpRequest<?> current = request;
        for (int depth = 0; depth < 16 && current != null; depth++) {
            if (current instanceof ServerHttpRequest<?> server) {
                return Optional.of(server);
            }
            current = current instanceof HttpRequestWrapper<?> wrapper ? wrapper.getDelegate() : null;
        }
        return ServerRequestContext.currentRequest()
            .filter(ServerHttpRequest.class::isInstance)
            .map(r -> (ServerHttpRequest<?>) r);
    }

    /** Collects chunks up to the cap; cancels and fails with {@link TooLarge} past it. */
    private static final class Collector implements Subscriber<byte[]> {
        final CompletableFuture<Body> result = new CompletableFuture<>();
        private final int cap;
        private byte[] buf;
        private int length;
        private Subscription subscription;

        Collector(int cap, OptionalLong expected) {
            this.cap = cap;
            // one spare byte past a known length: the end is then seen without growing a full buffer
            this.buf = new byte[(int) Math.min(cap + 1L, expected.isPresent() ? expected.getAsLong() + 1 : 8192)];
        }

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(byte[] chunk) {
            if (result.isDone()) {
                return;
            }
            if ((long) length + chunk.length > cap) {
                buf = null;
                subscription.cancel();
                result.completeExceptionally(new TooLarge());
                return;
            }
            if (length + chunk.length > buf.length) {
                buf = Arrays.copyOf(buf, (int) Math.min(cap + 1L, Math.max(length + chunk.length, buf.length * 2L)));
            }
            System.arraycopy(chunk, 0, buf, length, chunk.length);
            length += chunk.length;
        }

        @Override
        public void onError(Throwable t) {
            buf = null;
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            if (!result.isDone()) {
                result.complete(length == 0 ? Body.EMPTY : new Body(buf, length));
            }
        }
    }
}
