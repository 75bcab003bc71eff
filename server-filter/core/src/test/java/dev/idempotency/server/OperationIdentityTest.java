package dev.idempotency.server;

import dev.idempotency.testsupport.Http;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;

import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The operation's identity inside the route (CONTRACT M1) and the message ids derived from it
 * (CONTRACT M2), on blocking, reactive and asynchronous routes.
 */
@MicronautTest
@Property(name = "spec.name", value = "OperationIdentityTest")
class OperationIdentityTest {

    @Inject
    EmbeddedServer server;

    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    /** Each route answers with what it saw: "key|scope|recordId|messageId(a)|messageId(b)|argument equal". */
    @Controller("/op")
    @Requires(property = "spec.name", value = "OperationIdentityTest")
    static class OperationApi {

        static String describe(Optional<IdempotentOperation> current, @Nullable IdempotentOperation argument) {
            if (current.isEmpty()) {
                return "none|" + (argument == null ? "no argument" : "argument");
            }
            IdempotentOperation op = current.get();
            return String.join("|", op.key(), op.scope(), op.recordId(), op.messageId("payment.initiated"),
                op.messageId("ledger.booked"), String.valueOf(op.equals(argument)));
        }

        @Post("/blocking")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        String blocking(IdempotentOperation operation) {
            return describe(IdempotentOperation.current(), operation);
        }

        @Post("/mono")
        @Idempotent
        Mono<String> mono(IdempotentOperation operation) {
            return Mono.fromSupplier(() -> describe(IdempotentOperation.current(), operation));
        }

        @Post("/future")
        @Idempotent
        CompletableFuture<String> future(IdempotentOperation operation) {
            String seen = describe(IdempotentOperation.current(), operation);
            return CompletableFuture.supplyAsync(() -> seen);
        }

        @Post("/optional")
        @Idempotent(required = false)
        String optional(@Nullable IdempotentOperation operation) {
            return describe(IdempotentOperation.current(), operation);
        }

        @Post("/plain")
        String plain(@Nullable IdempotentOperation operation, @Nullable @Header("Idempotency-Key") String key) {
            return describe(IdempotentOperation.current(), operation);
        }
    }

    private String[] seen(String route, String key) {
        var r = http.postJson("/op/" + route, key, "{\"amount\":1}");
        assertThat(r.statusCode()).as(Http.body(r)).isEqualTo(200);
        return Http.body(r).split("\\|");
    }

    @ParameterizedTest(name = "M1: /op/{0} sees its key, scope and record id, as an argument and in the propagated context")
    @ValueSource(strings = {"blocking", "mono", "future"})
    void identityInsideTheRoute(String route) {
        String raw = "order-" + UUID.randomUUID();
        String[] seen = seen(route, "\"" + raw + "\"");
        assertThat(seen[0]).isEqualTo(raw);
        assertThat(seen[1]).isEqualTo("anonymous:anonymous POST /op/" + route);
        assertThat(seen[2]).hasSize(64).matches("[0-9a-f]{64}");
        assertThat(seen[5]).isEqualTo("true");
    }

    @Test
    @DisplayName("M2: message ids are name-based UUIDs: the same for a retry of the operation, two for two steps,"
        + " others for another key or another route")
    void messageIdsAreDeterministic() {
        String key = "\"" + UUID.randomUUID() + "\"";
        String[] first = seen("blocking", key);
        assertThat(first[3]).matches("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
        assertThat(first[3]).isNotEqualTo(first[4]);

        // the same operation as seen by another instance of the filter: the same key, scope and record
        IdempotentOperation again = new IdempotentOperation(first[0], first[1], first[2]);
        assertThat(again.messageId("payment.initiated")).isEqualTo(first[3]);
        assertThat(again.messageId("ledger.booked")).isEqualTo(first[4]);

        String[] otherRoute = seen("mono", key);
        String[] otherKey = seen("blocking", "\"" + UUID.randomUUID() + "\"");
        Set<String> ids = new HashSet<>();
        for (String[] s : new String[][] {first, otherRoute, otherKey}) {
            ids.add(s[3]);
            ids.add(s[4]);
        }
        assertThat(ids).hasSize(6);
        assertThat(otherRoute[2]).isNotEqualTo(first[2]);
    }

    @Test
    @DisplayName("M1: no identity where there is no operation: a route without @Idempotent, an optional key not sent")
    void noOperationWithoutTheFilter() {
        assertThat(seen("plain", "\"k\"")).containsExactly("none", "no argument");
        assertThat(seen("optional", null)).containsExactly("none", "no argument");
        String[] with = seen("optional", "\"k-" + UUID.randomUUID() + "\"");
        assertThat(with[5]).isEqualTo("true");
    }

    @Test
    @DisplayName("M2: a step name is required")
    void stepRequired() {
        IdempotentOperation op = new IdempotentOperation("k", "anonymous:anonymous POST /x", "0".repeat(64));
        assertThatThrownBy(() -> op.messageId(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThat(op.toString()).doesNotContain("k,").contains("000000000000");
    }
}
