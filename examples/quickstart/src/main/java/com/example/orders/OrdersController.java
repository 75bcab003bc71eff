// tag::server[]
package com.example.orders;

import com.example.orders.Orders.NewOrder;
import com.example.orders.Orders.Order;
import dev.idempotency.server.Idempotent;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.Status;

import java.util.concurrent.atomic.AtomicInteger;

@Controller("/orders")
public class OrdersController {

    private final AtomicInteger placed = new AtomicInteger();

    /**
     * Places an order. {@code @Idempotent}: the caller must send an Idempotency-Key; a retry with
     * the same key and body gets this response again instead of a second order, the same key
     * with another body gets 422, and a retry while this one runs gets 409 with Retry-After.
     */
    @Post
    @Idempotent
    @Status(HttpStatus.CREATED)
    public Order place(@Body NewOrder order) {
        return new Order("ord_" + placed.incrementAndGet(), order.item(), order.quantity());
    }

    /** @return how many orders this instance has placed */
    public int placed() {
        return placed.get();
    }
}
// end::server[]
