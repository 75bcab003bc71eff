package dev.idempotency.client;

import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.client.annotation.Client;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** C8: an @IdempotentCall mistake stops the application's start, in the SDK's words. */
class IdempotentCallValidationTest {

    @Client("/")
    @Requires(property = "spec.name", value = "IdempotentCallValidationTest.unknownSettings")
    interface UnknownSettings {
        @Post("/x")
        @IdempotentCall("nowhere")
        String send(@Body Map<String, Object> body);
    }

    @Client("/")
    @Requires(property = "spec.name", value = "IdempotentCallValidationTest.twoKeys")
    interface TwoKeys {
        @Post("/x")
        @IdempotentCall
        String send(@IdempotencyKey String a, @IdempotencyKey String b);
    }

    @Client("/")
    @Requires(property = "spec.name", value = "IdempotentCallValidationTest.keyNotString")
    interface KeyNotString {
        @Post("/x")
        @IdempotentCall
        String send(@IdempotencyKey long key);
    }

    @Test
    @DisplayName("C8: two @IdempotencyKey parameters, or one that is not a String, stop the start")
    void keyParameters() {
        assertThatThrownBy(() -> ApplicationContext.run(Map.of("spec.name", "IdempotentCallValidationTest.twoKeys")))
            .hasStackTraceContaining("more than one @IdempotencyKey parameter");
        assertThatThrownBy(() -> ApplicationContext.run(Map.of("spec.name", "IdempotentCallValidationTest.keyNotString")))
            .hasStackTraceContaining("must be a String, not long");
    }

    @Test
    @DisplayName("C8: settings a call names are looked up at its first call: a context that never calls it starts")
    void settingsAtFirstCall() {
        ApplicationContext.run(Map.of("spec.name", "IdempotentCallValidationTest.unknownSettings")).close();
    }
}
