package dev.idempotency.server;

import dev.idempotency.testsupport.Http;

import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.security.annotation.Secured;
import io.micronaut.security.authentication.AuthenticationRequest;
import io.micronaut.security.authentication.AuthenticationResponse;
import io.micronaut.security.authentication.provider.HttpRequestAuthenticationProvider;
import io.micronaut.security.rules.SecurityRule;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With Micronaut Security, the authenticated principal is the caller scope (S6): the filter
 * runs after the security phase, so two users sending the same key get their own results.
 */
@MicronautTest
@Property(name = "spec.name", value = "SecurityPrincipalScopeTest")
@Property(name = "micronaut.security.enabled", value = "true")
class SecurityPrincipalScopeTest {

    @Singleton
    @Requires(property = "spec.name", value = "SecurityPrincipalScopeTest")
    static class Users<B> implements HttpRequestAuthenticationProvider<B> {
        @Override
        public AuthenticationResponse authenticate(HttpRequest<B> request, AuthenticationRequest<String, String> auth) {
            String user = auth.getIdentity();
            return ("alice".equals(user) || "bob".equals(user)) && "pw".equals(auth.getSecret())
                ? AuthenticationResponse.success(user)
                : AuthenticationResponse.failure();
        }
    }

    @Controller("/secure")
    @Secured(SecurityRule.IS_AUTHENTICATED)
    @Requires(property = "spec.name", value = "SecurityPrincipalScopeTest")
    static class Api {
        final AtomicInteger executions = new AtomicInteger();

        @Post("/transfers")
        @Idempotent
        Map<String, Object> transfer(Principal principal, @Body Map<String, Object> body) {
            return Map.of("owner", principal.getName(), "execution", executions.incrementAndGet());
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    Api api;

    private static String basic(String user) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":pw").getBytes(StandardCharsets.UTF_8));
    }

    @Test
    @DisplayName("S6: the same key from two authenticated users runs twice; each user replays only their own result")
    void principalScopesTheKey() {
        Http http = new Http(server.getURI());
        String k = "\"" + UUID.randomUUID() + "\"";
        int before = api.executions.get();
        HttpResponse<byte[]> alice = http.postJson("/secure/transfers", k, "{\"amount\":1}", "Authorization", basic("alice"));
        HttpResponse<byte[]> bob = http.postJson("/secure/transfers", k, "{\"amount\":1}", "Authorization", basic("bob"));
        assertThat(alice.statusCode()).isEqualTo(200);
        assertThat(bob.statusCode()).isEqualTo(200);
        assertThat(new String(bob.body(), StandardCharsets.UTF_8)).contains("\"owner\":\"bob\"");
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.executions.get()).isEqualTo(before + 2);

        HttpResponse<byte[]> aliceRetry = http.postJson("/secure/transfers", k, "{\"amount\":1}", "Authorization", basic("alice"));
        assertThat(aliceRetry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(aliceRetry.body()).isEqualTo(alice.body());
        assertThat(api.executions.get()).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S6: unauthenticated requests are refused by security before the filter; nothing is stored")
    void securityRunsFirst() {
        Http http = new Http(server.getURI());
        String k = "\"" + UUID.randomUUID() + "\"";
        int before = api.executions.get();
        assertThat(http.postJson("/secure/transfers", k, "{}").statusCode()).isEqualTo(401);
        HttpResponse<byte[]> ok = http.postJson("/secure/transfers", k, "{}", "Authorization", basic("alice"));
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.executions.get()).isEqualTo(before + 1);
    }
}
