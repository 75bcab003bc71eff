package com.example.orders;

import io.micronaut.runtime.Micronaut;

/** Starts the orders API, configured by application-api.properties (port 8080). */
public class Application {

    /** The environment whose settings the API reads, beside application.properties. */
    static final String ENVIRONMENT = "api";

    public static void main(String[] args) {
        Micronaut.build(args).mainClass(Application.class).environments(ENVIRONMENT).start();
    }
}
