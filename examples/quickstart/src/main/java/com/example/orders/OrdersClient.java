// tag::client[]
package com.example.orders;

import com.example.orders.Orders.NewOrder;
import com.example.orders.Orders.Order;
import dev.idempotency.client.IdempotentCall;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.client.annotation.Client;

/**
 * The orders API as a declarative client. {@code @IdempotentCall("orders")}: each invocation is
 * one operation with one Idempotency-Key, retried with backoff on failures that may succeed
 * (connection errors, 409, 429, 5xx), always with that key; the retry settings are
 * {@code idempotency.client.orders.*}, the address {@code micronaut.http.services.orders.url}.
 */
@Client(id = "orders")
public interface OrdersClient {

    @Post("/orders")
    @IdempotentCall("orders")
    Order place(@Body NewOrder order);
}
// end::client[]
