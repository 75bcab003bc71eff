package dev.idempotency.openapi;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.Idempotent;
import dev.idempotency.server.ProblemCode;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.http.HttpResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The visitor reads nothing from the filter at compile time (the filter is not on the processor
 * path), so it carries copies of the filter's facts; these tests keep the copies equal.
 */
class FilterProblemTest {

    @Test
    @DisplayName("S21: the published problems are the filter's (S20): same codes, statuses and titles")
    void sameProblemsAsTheFilter() {
        List<String> published = Arrays.stream(FilterProblem.values())
            .map(p -> p.code + " " + p.status + " " + p.title).toList();
        List<String> filter = Arrays.stream(ProblemCode.values())
            .map(p -> p.code() + " " + p.status() + " " + p.title()).toList();
        assertThat(published).containsExactlyInAnyOrderElementsOf(filter);
    }

    @Test
    @DisplayName("S21: every published example detail is the text the filter sends for that problem")
    @SuppressWarnings("unchecked")
    void sameDetailsAsTheFilter() throws Exception {
        // the filter's own responses, built as it builds them (Responses is package-private: reflection)
        IdempotencyConfigurationProperties config = new IdempotencyConfigurationProperties();
        config.setHeaderName("X-Request-Key");
        config.setMaxRequestBodySize(4096);
        Class<?> type = Class.forName("dev.idempotency.server.internal.response.Responses");
        Constructor<?> constructor = type.getDeclaredConstructor(IdempotencyConfiguration.class, Clock.class);
        constructor.setAccessible(true);
        Object responses = constructor.newInstance(config, Clock.systemUTC());
        Map<FilterProblem, Object> sent = new EnumMap<>(FilterProblem.class);
        sent.put(FilterProblem.KEY_MISSING, call(responses, "keyMissing"));
        sent.put(FilterProblem.KEY_INVALID, call(responses, "keyRepeated", 2));
        sent.put(FilterProblem.BODY_UNREADABLE, call(responses, "bodyUnreadable"));
        sent.put(FilterProblem.REQUEST_IN_PROGRESS, call(responses, "inProgress", Duration.ofSeconds(2)));
        sent.put(FilterProblem.BODY_TOO_LARGE, call(responses, "bodyTooLarge"));
        sent.put(FilterProblem.KEY_REUSED, call(responses, "keyReused"));
        sent.put(FilterProblem.STORE_UNAVAILABLE, call(responses, "storeUnavailable"));
        assertThat(sent).containsOnlyKeys(FilterProblem.values());
        for (Map.Entry<FilterProblem, Object> e : sent.entrySet()) {
            byte[] body = ((HttpResponse<byte[]>) e.getValue()).body();
            JsonNode problem = new ObjectMapper().readTree(body);
            assertThat(problem.get("code").asText()).isEqualTo(e.getKey().code);
            assertThat(problem.get("detail").asText()).as(e.getKey().code)
                .isEqualTo(e.getKey().detail("X-Request-Key", "4096"));
        }
    }

    private static Object call(Object target, String method, Object... args) throws Exception {
        for (Method m : target.getClass().getDeclaredMethods()) {
            if (m.getName().equals(method) && m.getParameterCount() == args.length) {
                m.setAccessible(true);
                return m.invoke(target, args);
            }
        }
        throw new AssertionError("the filter's Responses has no " + method + " with " + args.length + " arguments");
    }

    @Test
    @DisplayName("S21: the published defaults are the filter's")
    void sameDefaultsAsTheFilter() {
        assertThat(IdempotencyOpenApiVisitor.IDEMPOTENT).isEqualTo(Idempotent.class.getName());
        assertThat(ConversionService.SHARED.convert(IdempotencyOpenApiVisitor.DEFAULT_RETENTION, Duration.class))
            .hasValue(IdempotencyConfigurationProperties.DEFAULT_RETENTION);
        assertThat(ConversionService.SHARED.convert(IdempotencyOpenApiVisitor.DEFAULT_LEASE, Duration.class))
            .hasValue(IdempotencyConfigurationProperties.DEFAULT_LEASE);
        assertThat(IdempotencyConfigurationProperties.DEFAULT_METHODS).containsExactlyInAnyOrder("POST", "PATCH");
    }
}
