package dev.idempotency.server;

import dev.idempotency.server.internal.response.Attributes;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.micronaut.http.HttpAttributes;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.simple.SimpleHttpRequest;
import java.security.Principal;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * CONTRACT S6: the caller part of the scope is the principal the request reports, whether it
 * keeps it as an attribute (Micronaut's default, what Micronaut Security fills) or answers
 * {@code getUserPrincipal()} itself.
 */
class RequestPrincipalTest {

    private static final Principal ALICE = () -> "alice";

    @Test
    @DisplayName("S6: the principal attribute is the caller; an attribute that is not a Principal is none")
    void principalAsAttribute() {
        SimpleHttpRequest<String> request = new SimpleHttpRequest<>(HttpMethod.POST, "/orders", "{}");
        assertNull(Attributes.principal(request));

        request.setAttribute(HttpAttributes.PRINCIPAL, ALICE);
        assertSame(ALICE, Attributes.principal(request));

        request.setAttribute(HttpAttributes.PRINCIPAL, "alice");
        assertNull(Attributes.principal(request));
    }

    @Test
    @DisplayName("S6: a request class that answers getUserPrincipal() itself is asked")
    void principalFromAnOverride() {
        SimpleHttpRequest<String> request = new SimpleHttpRequest<>(HttpMethod.POST, "/orders", "{}") {
            @Override
            public Optional<Principal> getUserPrincipal() {
                return Optional.of(ALICE);
            }
        };

        assertSame(ALICE, Attributes.principal(request));
    }
}
