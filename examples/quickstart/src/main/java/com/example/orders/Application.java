package com.example.orders;

import io.micronaut.runtime.Micronaut;

/** Starts the orders API on port 8080 (micronaut.server.port). */
public class Application {

    public static void main(String[] args) {
        Micronaut.run(Application.class, args);
    }
}
