// tag::caller[]
package com.example.orders;

import com.example.orders.Orders.NewOrder;
import com.example.orders.Orders.Order;
import dev.idempotency.client.IdempotentRequestException;
import io.micronaut.context.ApplicationContext;

/**
 * Places one order through {@link OrdersClient}, configured by application-caller.properties (the
 * API's address, the retries).
 */
public class PlaceOrder {

    public static void main(String[] args) {
        try (ApplicationContext context = ApplicationContext.run("caller")) {
            OrdersClient orders = context.getBean(OrdersClient.class);
            try {
                Order order = orders.place(new NewOrder("book", 2));
                System.out.println("placed " + order);
            } catch (IdempotentRequestException e) {
                // the SDK gave up (a refusal it must not retry, or its attempts ran out): the order
                // may exist; retrying later with e.key() is safe, a new key could order twice
                System.out.println("not placed, retry later with key " + e.key() + ": " + e.getMessage());
            }
        }
    }
}
// end::caller[]
