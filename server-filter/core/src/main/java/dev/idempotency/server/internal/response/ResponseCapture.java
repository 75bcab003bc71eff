package dev.idempotency.server.internal.response;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.BeanProvider;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.async.publisher.Publishers;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.core.io.Writable;
import io.micronaut.core.io.buffer.ByteArrayBufferFactory;
import io.micronaut.core.io.buffer.ReadBuffer;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpHeaders;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.body.AvailableByteBody;
import io.micronaut.http.body.ByteBody;
import io.micronaut.http.body.ByteBodyFactory;
import io.micronaut.http.body.CloseableByteBody;
import io.micronaut.http.body.MessageBodyHandlerRegistry;
import io.micronaut.http.body.MessageBodyWriter;
import io.micronaut.http.body.ResponseBodyWriter;
import io.micronaut.http.body.stream.BodySizeLimits;
import io.micronaut.http.server.types.CustomizableResponseType;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.web.router.RouteAttributes;
import io.micronaut.web.router.RouteInfo;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;

/**
 * Turns a handler's response into the bytes that go on the wire, once, so the stored copy and
 * the bytes the client receives are the same (CONTRACT S13, S15).
 *
 * <ul>
 *   <li>A body object is encoded with the application's own {@link MessageBodyWriter} for the
 *       response's media type, and the response is given those bytes to send.</li>
 *   <li>A streamed body (a {@link Publisher} of items: JSON streams, {@code text/event-stream},
 *       raw chunks) is encoded item by item exactly as the server would (the same writers, and
 *       for JSON the same {@code [}, {@code ,}, {@code ]} framing) and sent on as it flows while
 *       a copy is kept, up to {@code max-stored-body-size}; past that the copy is dropped and the
 *       record will say "omitted". The stored response is known when the stream ends.</li>
 *   <li>Files, input streams and other bodies the server writes itself are passed through
 *       untouched and stored as omitted.</li>
 * </ul>
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class ResponseCapture {

    private static final byte[] EMPTY = new byte[0];
    private static final byte[] OPEN = {'['};
    private static final byte[] COMMA = {','};
    private static final byte[] CLOSE = {']'};
    private static final byte[] EMPTY_ARRAY = {'[', ']'};

    private final MessageBodyHandlerRegistry registry;
    private final ConversionService conversionService;
    private final IdempotencyConfiguration config;
    private final BeanProvider<ExecutorService> blocking;
    private final ByteBodyFactory bodies = ByteBodyFactory.createDefault(ByteArrayBufferFactory.INSTANCE);
    /**
     * The allow-listed headers (S13) under their usual spelling, made once ({@link HeaderNames});
     * a name's {@code toString} is the spelling stored.
     */
    private final CharSequence[] storedHeaderNames;

    ResponseCapture(MessageBodyHandlerRegistry registry, ConversionService conversionService,
                    IdempotencyConfiguration config, @Named(TaskExecutors.BLOCKING) BeanProvider<ExecutorService> blocking) {
        this.registry = registry;
        this.conversionService = conversionService;
        this.config = config;
        this.blocking = blocking;
        this.storedHeaderNames = config.getStoredHeaders().stream().map(ResponseCapture::displayName)
            .map(HeaderNames::of).toArray(CharSequence[]::new);
    }

    /**
     * What a captured response will be stored as.
     *
     * @param response the response to send, its body now bytes or a capturing stream
     * @param stored   completes with what to store: at once for a body in memory, when the
     *                 stream ends for a streamed one; fails when the stream fails or is
     *                 abandoned (the result must then be released, not stored)
     * @param settled  for a streamed body: complete it once the record is stored or released;
     *                 the stream's end (or failure) reaches the client only then, so a retry
     *                 sent right after the response meets the record settled. {@code null}
     *                 otherwise
     * @param streamed whether the body is a stream still flowing
     */
    public record Captured(MutableHttpResponse<?> response, CompletableFuture<StoredResponse> stored,
                    CompletableFuture<Void> settled, boolean streamed) {
    }

    /**
     * Captures the response for a request whose answer may go out before it is stored (leased
     * mode): a streamed body flows on to the client while it is copied.
     *
     * @return completes once the response may be sent: at once, or for a stream when its first
     *     item has been encoded; fails when the stream fails before its first item
     */
    public CompletableFuture<Captured> capture(HttpRequest<?> request, MutableHttpResponse<?> response) {
        Object body = response.getBody().orElse(null);
        if (isStream(body)) {
            Copy copy = new Copy(response);
            FirstItemGate<byte[]> gate = FirstItemGate.open(copy.attach(encodeStream(request, response, body)));
            return gate.ready().thenApply(items -> {
                Flux<ReadBuffer> buffers = Flux.from(items).map(bytes -> bodies.readBufferFactory().adapt(bytes));
                CloseableByteBody streamBody = bodies.adapt(buffers, BodySizeLimits.UNLIMITED, null, () -> {
                    copy.abandoned(); // discarded unsent (the client went away): nothing more to produce
                    gate.cancel();
                });
                setBody(response, streamBody);
                return new Captured(response, copy.stored, copy.settled, true);
            });
        }
        return CompletableFuture.completedFuture(new Captured(response,
            CompletableFuture.completedFuture(captureInMemory(request, response, body)), null, false));
    }

    /**
     * Captures the whole response before anything is sent (transactional mode, which commits
     * before answering): a streamed body is collected in full, sent as one body and stored
     * (as omitted past {@code max-stored-body-size}).
     *
     * @return completes with the captured response once the stream, if any, has ended
     */
    public CompletableFuture<Captured> captureWhole(HttpRequest<?> request, MutableHttpResponse<?> response) {
        Object body = response.getBody().orElse(null);
        if (!isStream(body)) {
            return capture(request, response);
        }
        return Flux.from(encodeStream(request, response, body))
            .collect(ByteArrayOutputStream::new, (out, bytes) -> out.write(bytes, 0, bytes.length))
            .map(out -> {
                byte[] all = out.toByteArray();
                setBody(response, all);
                boolean omitted = all.length > config.getMaxStoredBodySize();
                StoredResponse stored = new StoredResponse(response.code(), storedHeaders(response),
                    omitted ? EMPTY : all, omitted, ReasonPhrases.own(response));
                return new Captured(response, CompletableFuture.completedFuture(stored), null, false);
            })
            .toFuture();
    }

    private StoredResponse captureInMemory(HttpRequest<?> request, MutableHttpResponse<?> response, Object body) {
        byte[] bytes = EMPTY;
        boolean omitted = false;
        if (body != null) {
            if (isPassedThrough(body)) {
                omitted = true;
            } else {
                Optional<byte[]> encoded = encode(request, response, body);
                if (encoded.isPresent()) {
                    bytes = encoded.get();
                    omitted = bytes.length > config.getMaxStoredBodySize();
                } else {
                    omitted = true;
                }
            }
        }
        return new StoredResponse(response.code(), storedHeaders(response), omitted ? EMPTY : bytes, omitted,
            ReasonPhrases.own(response));
    }

    /**
     * The allow-listed headers the response carries (S13), under their usual spelling (header
     * names are case-insensitive): looked up one by one, which is cheaper than listing every
     * header the response has, and a header that is not there costs one lookup and no list.
     * {@link StoredResponse} makes its own unmodifiable copy, so this one is built as cheaply as
     * it can be: one header (the usual case) as a one-entry map, more in a map that keeps order.
     */
    private Map<String, List<String>> storedHeaders(MutableHttpResponse<?> response) {
        MutableHttpHeaders all = response.getHeaders();
        String firstName = null;
        List<String> firstValues = null;
        Map<String, List<String>> more = null;
        for (CharSequence name : storedHeaderNames) {
            if (!all.contains(name)) {
                continue;
            }
            List<String> values = all.getAll(name);
            if (values.isEmpty()) {
                continue;
            }
            if (firstName == null) {
                firstName = name.toString();
                firstValues = values;
            } else {
                if (more == null) {
                    more = new LinkedHashMap<>(8);
                    more.put(firstName, firstValues);
                }
                more.put(name.toString(), values);
            }
        }
        return more != null ? more : firstName != null ? Map.of(firstName, firstValues) : Map.of();
    }

    /** {@code content-type} as {@code Content-Type}: the defaults' own spelling, else each word capitalized. */
    static String displayName(String lowerCase) {
        for (String known : IdempotencyConfigurationProperties.DEFAULT_STORED_HEADERS) {
            if (known.equalsIgnoreCase(lowerCase)) {
                return known;
            }
        }
        StringBuilder sb = new StringBuilder(lowerCase.length());
        boolean start = true;
        for (int i = 0; i < lowerCase.length(); i++) {
            char c = lowerCase.charAt(i);
            sb.append(start ? Character.toUpperCase(c) : c);
            start = c == '-';
        }
        return sb.toString();
    }

    /** The response's content type, else the route's first produced type, else JSON. */
    private static MediaType mediaType(@Nullable RouteInfo<?> route, MutableHttpResponse<?> response) {
        MediaType set = response.getContentType().orElse(null);
        if (set != null) {
            return set;
        }
        List<MediaType> produces = route == null ? null : route.getProduces();
        return produces == null || produces.isEmpty() ? MediaType.APPLICATION_JSON_TYPE : produces.get(0);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Optional<byte[]> encode(HttpRequest<?> request, MutableHttpResponse<?> response, Object body) {
        RouteInfo<?> route = Attributes.route(request);
        MediaType mediaType = mediaType(route, response);
        if (body instanceof byte[] b) {
            if (response.getContentType().isEmpty()) {
                response.contentType(mediaType);
            }
            return Optional.of(b);
        }
        Argument declared = route == null ? null : route.getResponseBodyType();
        Argument argument = declared != null && declared.getType() != Object.class && declared.getType().isInstance(body)
            ? declared : Argument.of(body.getClass());
        MessageBodyWriter<Object> writer = (MessageBodyWriter<Object>) response.getBodyWriter().orElse(null);
        if (writer == null || !writer.isWriteable(argument, mediaType)) {
            writer = (MessageBodyWriter<Object>) registry.findWriter(argument, List.of(mediaType)).orElse(null);
        }
        if (writer == null) {
            return Optional.empty();
        }
        EncodingBuffer out = EncodingBuffer.forThisThread();
        writer.writeTo(argument, mediaType, body, response.getHeaders(), out);
        byte[] bytes = out.toByteArray();
        if (response.getContentType().isEmpty()) {
            response.contentType(mediaType);
        }
        setBody(response, bytes);
        return Optional.of(bytes);
    }

    /**
     * The stream's bytes as the server would write them: each item through the route's writer
     * (or the registry's writer for the item's own type), JSON streams framed as an array.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private Publisher<byte[]> encodeStream(HttpRequest<?> request, MutableHttpResponse<?> response, Object body) {
        RouteInfo<Object> route = (RouteInfo<Object>) RouteAttributes.getRouteInfo(response)
            .or(() -> RouteAttributes.getRouteInfo(request)).orElse(null);
        MediaType mediaType = mediaType(Attributes.route(request), response);
        if (response.getContentType().isEmpty()) {
            response.contentType(mediaType);
        }
        boolean json = route != null && MediaType.EXTENSION_JSON.equals(mediaType.getExtension())
            && route.isResponseBodyJsonFormattable();
        Flux<byte[]> items = Flux.from(Publishers.convertToPublisher(conversionService, body))
            .concatMap(item -> encodeItem(request, response, route, mediaType, item));
        return json ? frameAsJsonArray(items) : items;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Mono<byte[]> encodeItem(HttpRequest<?> request, MutableHttpResponse<?> response,
                                    RouteInfo<Object> route, MediaType mediaType, Object item) {
        MessageBodyWriter<Object> writer = route == null ? null : route.getMessageBodyWriter();
        Argument<Object> type = route == null ? null : (Argument<Object>) route.getResponseBodyType();
        if (writer == null || type == null || !type.isInstance(item) || !writer.isWriteable(type, mediaType)) {
            type = (Argument<Object>) Argument.ofInstance(item);
            writer = registry.getWriter(type, List.of(mediaType));
        }
        MessageBodyWriter<Object> w = writer;
        Argument<Object> t = type;
        if (w.isBlocking()) {
            return Mono.fromCallable(() -> piece(w, request, response, t, mediaType, item))
                .subscribeOn(reactor.core.scheduler.Schedulers.fromExecutor(blocking.get()))
                .flatMap(this::bytes);
        }
        return Mono.defer(() -> bytes(piece(w, request, response, t, mediaType, item)));
    }

    private CloseableByteBody piece(MessageBodyWriter<Object> writer, HttpRequest<?> request,
                                    MutableHttpResponse<?> response, Argument<Object> type, MediaType mediaType,
                                    Object item) {
        return ResponseBodyWriter.wrap(writer).writePiece(bodies, request, response, type, mediaType, item);
    }

    private Mono<byte[]> bytes(CloseableByteBody piece) {
        if (piece instanceof AvailableByteBody available) {
            try (piece) {
                return Mono.just(available.toByteArray());
            }
        }
        return Mono.fromFuture(piece.buffer()).map(b -> {
            try (b) {
                return b.toByteArray();
            }
        });
    }

    private static Flux<byte[]> frameAsJsonArray(Flux<byte[]> items) {
        return Flux.defer(() -> {
            boolean[] any = {false};
            return items.map(bytes -> {
                byte[] separator = any[0] ? COMMA : OPEN;
                any[0] = true;
                byte[] framed = Arrays.copyOf(separator, bytes.length + 1);
                System.arraycopy(bytes, 0, framed, 1, bytes.length);
                return framed;
            }).concatWith(Mono.fromSupplier(() -> any[0] ? CLOSE : EMPTY_ARRAY));
        });
    }

    @SuppressWarnings("unchecked")
    private static void setBody(MutableHttpResponse<?> response, Object body) {
        ((MutableHttpResponse<Object>) response).body(body);
    }

    /** A body the server streams: a publisher of items (a single value was resolved before filters). */
    private static boolean isStream(Object body) {
        return body != null && !(body instanceof ByteBody) && Publishers.isConvertibleToPublisher(body);
    }

    /** A body the server writes itself from a source we do not copy (files, input streams). */
    private static boolean isPassedThrough(Object body) {
        return body instanceof InputStream
            || body instanceof File
            || body instanceof ByteBody
            || body instanceof Writable
            || body instanceof CustomizableResponseType;
    }

    /** The copy of one streamed body, up to the stored-body cap. */
    private final class Copy {
        final CompletableFuture<StoredResponse> stored = new CompletableFuture<>();
        final CompletableFuture<Void> settled = new CompletableFuture<>();
        private final MutableHttpResponse<?> response;
        private final int cap = config.getMaxStoredBodySize();
        private byte[] buf = new byte[256];
        private int length;
        private boolean overflowed;
        private volatile boolean started;

        Copy(MutableHttpResponse<?> response) {
            this.response = response;
        }

        /**
         * The chunks, copied as they pass. Once the first chunk went out, the end and a failure
         * of the stream are held back until the record is settled (see
         * {@link Captured#settled()}); before that nothing was sent yet, and they pass at once.
         */
        Flux<byte[]> attach(Publisher<byte[]> chunks) {
            return Flux.from(chunks)
                .doOnNext(this::append)
                .concatWith(Mono.defer(() -> {
                    ended();
                    return started ? Mono.fromFuture(settled).then(Mono.<byte[]>empty()) : Mono.<byte[]>empty();
                }))
                .onErrorResume(e -> {
                    if (stored.completeExceptionally(e) && started) {
                        return Mono.fromFuture(settled).then(Mono.error(e));
                    }
                    return Mono.error(e);
                })
                .doOnCancel(this::abandoned);
        }

        private void append(byte[] chunk) {
            started = true;
            if (overflowed) {
                return;
            }
            if ((long) length + chunk.length > cap) {
                overflowed = true;
                buf = null;
                return;
            }
            if (length + chunk.length > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(length + chunk.length, Math.min(cap, buf.length * 2)));
            }
            System.arraycopy(chunk, 0, buf, length, chunk.length);
            length += chunk.length;
        }

        private void ended() {
            byte[] body = overflowed ? EMPTY : Arrays.copyOf(buf, length);
            stored.complete(new StoredResponse(response.code(), storedHeaders(response), body, overflowed,
                ReasonPhrases.own(response)));
        }

        /** The client went away, or the body was discarded unread: the result is not complete. */
        void abandoned() {
            stored.completeExceptionally(new CompletionException(new IllegalStateException(
                "the streamed response was not sent to the end")));
        }
    }
}
