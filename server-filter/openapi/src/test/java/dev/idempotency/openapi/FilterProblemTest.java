package dev.idempotency.openapi;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.Idempotent;
import dev.idempotency.server.ProblemCode;
import io.micronaut.core.convert.ConversionService;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
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
