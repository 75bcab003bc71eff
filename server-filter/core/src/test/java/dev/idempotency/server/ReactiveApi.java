package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.QueryValue;
import io.micronaut.http.sse.Event;
import io.micronaut.serde.annotation.Serdeable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Reactive and streaming routes (CONTRACT S15): no {@code @ExecuteOn}, so Micronaut runs them on
 * the event loop. Every route is {@code required = false}, so a request without a key shows the
 * bytes the server itself writes for the same result, to compare with the filter's capture.
 * Bodies depend on the {@code n} query value only, never on the execution count, so the bytes of
 * an unprotected call, an original and a replay can be compared.
 */
@Controller("/rx")
@Requires(property = "spec.name", value = "StreamingResponsesTest")
class ReactiveApi {

    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    final Map<String, String> threads = new ConcurrentHashMap<>();

    int calls(String route) {
        return calls.computeIfAbsent(route, r -> new AtomicInteger()).get();
    }

    private void count(String route) {
        calls.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
        threads.put(route, Thread.currentThread().getName());
    }

    @Serdeable
    record Item(int index, String name, double price) {
    }

    private static Flux<Item> items(int n) {
        return Flux.range(0, n).map(i -> new Item(i, "item \u00e9 " + i, i * 1.5));
    }

    @Post(value = "/text", produces = MediaType.TEXT_PLAIN)
    @Idempotent(required = false)
    Publisher<String> text(@QueryValue(defaultValue = "3") int n) {
        count("text");
        return Flux.range(0, n).map(i -> "chunk-" + i + ";");
    }

    @Post("/json")
    @Idempotent(required = false)
    Flux<Item> json(@QueryValue(defaultValue = "3") int n) {
        count("json");
        return items(n).delayElements(Duration.ofMillis(1));
    }

    @Post(value = "/sse", produces = MediaType.TEXT_EVENT_STREAM)
    @Idempotent(required = false)
    Publisher<Event<Item>> sse(@QueryValue(defaultValue = "3") int n) {
        count("sse");
        return items(n).map(item -> Event.of(item).id(Integer.toString(item.index())).name("item"));
    }

    @Post(value = "/bytes", produces = MediaType.APPLICATION_OCTET_STREAM)
    @Idempotent(required = false)
    Flux<byte[]> bytes(@QueryValue(defaultValue = "3") int n) {
        count("bytes");
        return Flux.range(0, n).map(i -> {
            byte[] chunk = new byte[256];
            for (int b = 0; b < chunk.length; b++) {
                chunk[b] = (byte) (b + i);
            }
            return chunk;
        });
    }

    @Post("/future")
    @Idempotent(required = false)
    CompletableFuture<Item> future(@QueryValue(defaultValue = "3") int n) {
        count("future");
        return CompletableFuture.supplyAsync(() -> new Item(n, "future", n * 2.5),
            CompletableFuture.delayedExecutor(5, java.util.concurrent.TimeUnit.MILLISECONDS));
    }

    @Post("/mono")
    @Idempotent(required = false)
    Mono<HttpResponse<Item>> mono(@QueryValue(defaultValue = "3") int n) {
        count("mono");
        return Mono.<HttpResponse<Item>>fromCallable(() -> HttpResponse.created(new Item(n, "mono", n * 0.25))
                .header("ETag", "\"m" + n + "\""))
            .subscribeOn(Schedulers.parallel());
    }

    @Post(value = "/failing", produces = MediaType.TEXT_PLAIN)
    @Idempotent(required = false)
    Flux<String> failing() {
        count("failing");
        return Flux.just("one;", "two;").concatWith(Flux.error(new IllegalStateException("stream broke")));
    }

    @Post(value = "/failing-first", produces = MediaType.TEXT_PLAIN)
    @Idempotent(required = false)
    Flux<String> failingFirst() {
        count("failing-first");
        return Flux.error(new IllegalStateException("stream broke before its first item"));
    }

    @Post(value = "/endless", produces = MediaType.TEXT_EVENT_STREAM)
    @Idempotent(required = false)
    Flux<Event<String>> endless() {
        count("endless");
        return Flux.interval(Duration.ofMillis(20)).map(i -> Event.of("tick " + i));
    }
}
