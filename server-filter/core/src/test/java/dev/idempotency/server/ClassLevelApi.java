package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** {@link Idempotent} on the class covers every method; a method may override members. */
@Controller("/class")
@Idempotent
@Requires(property = "spec.name", value = "IdempotencyFilterTest")
class ClassLevelApi {

    final AtomicInteger calls = new AtomicInteger();

    @Post("/required")
    Map<String, Object> required() {
        return Map.of("execution", calls.incrementAndGet());
    }

    @Post("/optional")
    @Idempotent(required = false)
    Map<String, Object> optional() {
        return Map.of("execution", calls.incrementAndGet());
    }
}
