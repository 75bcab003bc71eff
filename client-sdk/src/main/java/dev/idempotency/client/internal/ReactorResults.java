package dev.idempotency.client.internal;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.concurrent.CompletableFuture;

/**
 * An asynchronous declarative call's result as the Reactor type its method declares. Micronaut's
 * own conversion of a {@code CompletableFuture} to a {@code Publisher} gives neither a {@code Mono}
 * nor a {@code Flux} without micronaut-reactor. Only loaded when Reactor is on the classpath.
 */
final class ReactorResults {

    static final boolean PRESENT = present();

    private ReactorResults() {
    }

    private static boolean present() {
        try {
            Class.forName("reactor.core.publisher.Mono", false, ReactorResults.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** @return whether {@code type} is a Reactor type this class adapts to */
    static boolean handles(Class<?> type) {
        return type == Mono.class || type == Flux.class;
    }

    /** @return {@code result} as a {@code Mono} or {@code Flux} (of its one value), per {@code type} */
    static Object adapt(Class<?> type, CompletableFuture<Object> result) {
        Mono<Object> mono = Mono.fromFuture(result);
        return type == Flux.class ? Flux.from(mono) : mono;
    }
}
