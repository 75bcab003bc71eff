// tag::programmatic[]
package com.example.orders;

import com.example.orders.Orders.NewOrder;
import com.example.orders.Orders.Order;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import io.micronaut.context.ApplicationContext;
import io.micronaut.inject.qualifiers.Qualifiers;

/** Places one order with the programmatic client: the same policy as {@link OrdersClient}, in code. */
public class PlaceOrderProgrammatically {

    /**
     * One operation: one Idempotency-Key, as many attempts as the policy allows, all with that key.
     *
     * @param orders the client configured by {@code idempotency.client.orders.*}
     * @return the order, and how it was got: {@code key()}, {@code attempts()}, {@code replayed()}
     *     (an earlier attempt ran but its response was lost: this is the stored answer)
     */
    static IdempotentResult<Order> place(IdempotentClient orders, NewOrder order) {
        return orders.execute(IdempotentRequest.post("/orders", order), Order.class);
    }

    public static void main(String[] args) {
        try (ApplicationContext context = ApplicationContext.run("caller")) {
            IdempotentClient orders = context.getBean(IdempotentClient.class, Qualifiers.byName("orders"));
            try {
                IdempotentResult<Order> placed = place(orders, new NewOrder("book", 2));
                System.out.println("placed " + placed.body().orElseThrow() + " with key " + placed.key()
                    + " in " + placed.attempts() + " attempt(s)");
            } catch (IdempotentRequestException e) {
                // given up: retrying later with the same key is safe (.key(e.key()) on the operation)
                System.out.println("not placed, retry later with key " + e.key() + ": " + e.getMessage());
            }
        }
    }
}
// end::programmatic[]
