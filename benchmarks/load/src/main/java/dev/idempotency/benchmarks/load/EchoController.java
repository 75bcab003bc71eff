package dev.idempotency.benchmarks.load;

import dev.idempotency.server.Idempotent;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;

/**
 * The load benchmark's service: one trivial JSON echo, on the blocking executor as a JDBC-backed
 * handler would be, five times: without the filter ({@code /echo}), under it
 * ({@code /idem/echo}), under {@link FloorFilter} ({@code /floor/echo}), the least any
 * non-blocking filter that reads the body costs, under {@link StoreFloorFilter}
 * ({@code /store-floor/echo}), that plus the store's two round trips, and under
 * {@link WorkFloorFilter} ({@code /work-floor/echo}), the floor plus a fixed amount of CPU work.
 * They run the same code in the same process, so their ratios are the filter's cost. Only the
 * routes under {@code /traced/} are traced (Micronaut's OpenTelemetry, see {@link LoadApp}):
 * {@link TracingLatency} compares them with the untraced ones.
 */
@Controller
@ExecuteOn(TaskExecutors.BLOCKING)
class EchoController {

    /** A small order, about 75 bytes of JSON. */
    @Serdeable
    record Order(long amount, String currency, String customer, String description) {
    }

    @Post("/echo")
    HttpResponse<Order> echo(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/floor/echo")
    HttpResponse<Order> floorEcho(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/store-floor/echo")
    HttpResponse<Order> storeFloorEcho(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/work-floor/echo")
    HttpResponse<Order> workFloorEcho(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/idem/echo")
    @Idempotent
    HttpResponse<Order> idempotentEcho(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/traced/echo")
    HttpResponse<Order> tracedEcho(@Body Order order) {
        return HttpResponse.created(order);
    }

    @Post("/traced/idem/echo")
    @Idempotent
    HttpResponse<Order> tracedIdempotentEcho(@Body Order order) {
        return HttpResponse.created(order);
    }
}
