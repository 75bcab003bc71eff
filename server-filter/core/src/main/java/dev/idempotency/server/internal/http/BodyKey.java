package dev.idempotency.server.internal.http;

import dev.idempotency.server.internal.engine.KeySource;
import dev.idempotency.server.internal.fingerprint.KeyHeader;
import dev.idempotency.server.internal.fingerprint.MalformedKeyException;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.type.Argument;
import io.micronaut.json.JsonMapper;
import io.micronaut.json.tree.JsonNode;

import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;

/**
 * The key of a route that takes it from a JSON body member (CONTRACT S4,
 * {@code @Idempotent(keyPointer = ...)}): the string at the pointer, under the limits of S5.
 *
 * @param key     the key, or {@code null} when there is none
 * @param problem why the member is not a key (not a string, past the limits), or {@code null}
 *                when it is, or when the body has no such member (a missing key)
 */
@Internal
public record BodyKey(@Nullable KeyHeader key, @Nullable String problem) {

    private static final BodyKey MISSING = new BodyKey(null, null);

    /** Reads a JSON body into a tree. */
    public interface Parser {
        /** @return the body's tree, or {@code null} when it is not JSON */
        @Nullable
        JsonNode parse(byte[] body, int length);
    }

    /** @return a parser on the application's JSON mapper; without one, a parser that says what is missing */
    public static Parser parser(@Nullable JsonMapper json) {
        if (json == null) {
            return (body, length) -> {
                throw new IllegalStateException("@Idempotent(keyPointer) needs the application's JsonMapper to read"
                    + " the key from the body: add micronaut-serde-jackson (or another Micronaut JSON module)");
            };
        }
        return (body, length) -> {
            try {
                return json.readValue(length == body.length ? body : Arrays.copyOf(body, length), Argument.of(JsonNode.class));
            } catch (IOException | RuntimeException notJson) {
                return null;
            }
        };
    }

    /** @return the key at {@code source}'s pointer in the body */
    public static BodyKey find(Parser parser, KeySource source, @Nullable String contentType, byte[] body, int length) {
        if (length == 0 || !isJson(contentType)) {
            return MISSING;
        }
        JsonNode node = parser.parse(body, length);
        for (String token : source.tokens()) {
            if (node == null) {
                return MISSING;
            }
            if (node.isObject()) {
                node = node.get(token);
            } else if (node.isArray() && token.matches("0|[1-9][0-9]{0,8}")) {
                int i = Integer.parseInt(token);
                node = i < node.size() ? node.get(i) : null;
            } else {
                return MISSING;
            }
        }
        if (node == null || node.isNull()) {
            return MISSING;
        }
        if (!node.isString()) {
            return new BodyKey(null, source.describe() + " must be a string, and is not");
        }
        try {
            return new BodyKey(new KeyHeader(node.getStringValue()), null);
        } catch (MalformedKeyException e) {
            return new BodyKey(null, e.getMessage());
        }
    }

    private static boolean isJson(@Nullable String contentType) {
        if (contentType == null) {
            return false;
        }
        int semi = contentType.indexOf(';');
        String type = (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
        return type.equals("application/json") || (type.startsWith("application/") && type.endsWith("+json"));
    }
}
