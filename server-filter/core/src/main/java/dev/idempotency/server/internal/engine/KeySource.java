package dev.idempotency.server.internal.engine;

import io.micronaut.core.annotation.Internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where a route's requests carry their key (CONTRACT S4): the {@code Idempotency-Key} header as
 * an sf-string, another header as its raw value ({@code @Idempotent(keyHeader = "webhook-id")}),
 * or a string member of a JSON body ({@code @Idempotent(keyPointer = "/idempotency_key")}).
 *
 * @param kind    which of the three
 * @param name    the header's name, or the JSON Pointer
 * @param tokens  the pointer's reference tokens, unescaped ({@code ~1} is {@code /}, {@code ~0} is
 *                {@code ~}); empty for a header
 */
@Internal
public record KeySource(Kind kind, String name, List<String> tokens) {

    /** The three places a key can come from. */
    public enum Kind {
        /** The configured key header, an RFC 9651 sf-string (a bare token unless strict). */
        HEADER,
        /** Another header, taken as its raw value. */
        RAW_HEADER,
        /** A string member of a JSON body. */
        BODY_MEMBER
    }

    public KeySource {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(name, "name");
        tokens = List.copyOf(tokens);
    }

    /** @return the configured header, parsed as an sf-string */
    public static KeySource header(String name) {
        return new KeySource(Kind.HEADER, name, List.of());
    }

    /** @return another header, taken as its raw value */
    public static KeySource rawHeader(String name) {
        return new KeySource(Kind.RAW_HEADER, name, List.of());
    }

    /**
     * @param pointer an RFC 6901 JSON Pointer to a member, e.g. {@code /idempotency_key}
     * @return the body member at {@code pointer}
     * @throws IllegalArgumentException when {@code pointer} is not a pointer to a member or element
     */
    public static KeySource bodyMember(String pointer) {
        if (pointer.isEmpty() || pointer.charAt(0) != '/') {
            throw new IllegalArgumentException("a JSON Pointer to the key starts with '/', e.g. /idempotency_key;"
                + " was \"" + pointer + "\"");
        }
        List<String> tokens = new ArrayList<>();
        for (String raw : pointer.substring(1).split("/", -1)) {
            if (raw.matches(".*~(?![01]).*")) {
                throw new IllegalArgumentException("\"" + pointer + "\" is not a JSON Pointer: '~' must be followed"
                    + " by 0 or 1");
            }
            tokens.add(raw.replace("~1", "/").replace("~0", "~"));
        }
        return new KeySource(Kind.BODY_MEMBER, pointer, tokens);
    }

    /** @return what a problem response names as the key's place, e.g. {@code the webhook-id header} */
    public String describe() {
        return kind == Kind.BODY_MEMBER ? "the JSON body member " + name : "the " + name + " header";
    }
}
