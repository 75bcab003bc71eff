package com.example.orders;

import io.micronaut.serde.annotation.Serdeable;

/** The orders API's JSON: what a caller sends, and what it gets back. */
public final class Orders {

    private Orders() {
    }

    /** @param item what to order; @param quantity how many */
    @Serdeable
    public record NewOrder(String item, int quantity) {
    }

    /** @param id the order's id; @param item what was ordered; @param quantity how many */
    @Serdeable
    public record Order(String id, String item, int quantity) {
    }
}
