package dev.idempotency.openapi;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import io.micronaut.inject.visitor.VisitorContext;
import io.swagger.v3.oas.models.Components;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.media.IntegerSchema;
import io.swagger.v3.oas.models.media.ObjectSchema;
import io.swagger.v3.oas.models.media.StringSchema;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import static dev.idempotency.openapi.IdempotencyOpenApiVisitor.placeholder;

/**
 * The one RFC 9457 problem schema, {@code components/schemas/IdempotencyProblem}, that every
 * problem response of an {@code @Idempotent} operation refers to. micronaut-openapi builds the
 * document in a model it keeps in the compiler's visitor context; the schema goes into that model
 * (made here when micronaut-openapi has not made it yet, which it then takes over), because
 * swagger annotations cannot declare a component without a class to hang it on.
 */
final class ProblemSchema {

    /** Where micronaut-openapi keeps the document it builds (its {@code Utils.ATTR_OPENAPI}). */
    static final String OPENAPI_ATTRIBUTE = "io.micronaut.OPENAPI";

    private ProblemSchema() {
    }

    /** Adds the schema to the document being built, once. */
    static void register(VisitorContext context) {
        OpenAPI openApi = context.get(OPENAPI_ATTRIBUTE, OpenAPI.class).orElse(null);
        if (openApi == null) {
            openApi = new OpenAPI();
            context.put(OPENAPI_ATTRIBUTE, openApi);
        }
        if (openApi.getComponents() == null) {
            openApi.setComponents(new Components());
        }
        Components components = openApi.getComponents();
        if (components.getSchemas() == null || !components.getSchemas().containsKey(OperationAnnotations.PROBLEM_SCHEMA)) {
            components.addSchemas(OperationAnnotations.PROBLEM_SCHEMA, schema());
        }
    }

    private static ObjectSchema schema() {
        ObjectSchema problem = new ObjectSchema();
        problem.setDescription("RFC 9457 problem details, as the Idempotency-Key filter sends them: the stable"
            + " problem code in code; detail says what to do and never contains request data.");
        problem.addProperty("type", new StringSchema().format("uri").description("The contract page with the code as"
            + " fragment: " + placeholder("contract-url", IdempotencyConfigurationProperties.DEFAULT_CONTRACT_PAGE) + "#<code>"));
        problem.addProperty("title", new StringSchema().description("The code's fixed title."));
        problem.addProperty("status", new IntegerSchema().description("The HTTP status."));
        problem.addProperty("detail", new StringSchema().description("What to do; never contains request data."));
        // no enum: an operation may answer the same statuses itself, with codes of its own
        problem.addProperty("code", new StringSchema().description("The stable problem code. The filter's are "
            + Arrays.stream(FilterProblem.values()).map(p -> p.code).collect(Collectors.joining(", "))
            + "; each response says which of them its status carries."));
        problem.setRequired(List.of("type", "title", "status", "detail", "code"));
        return problem;
    }
}
