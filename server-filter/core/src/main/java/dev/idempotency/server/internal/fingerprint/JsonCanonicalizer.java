package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

import java.nio.charset.StandardCharsets;

/**
 * RFC 8785 (JCS) canonical form of a JSON text, in one pass over its bytes, without a tree.
 *
 * <p>A strict RFC 8259 scanner reads the UTF-8 input and writes every value in canonical form
 * straight into a {@link CanonicalBuffer}, each input byte looked at once:
 * <ul>
 *   <li>a string that is plain ASCII without escapes (the common case) is already canonical and
 *       is copied as it is; otherwise escapes are decoded and the string written with JCS's
 *       minimal escaping ({@code \"}, {@code \\}, {@code \b \f \n \r \t}, other control characters
 *       as lower-case backslash-u-00xx escapes) and everything else as UTF-8; raw UTF-8 is validated and
 *       kept;</li>
 *   <li>a number with at most 15 significant digits, well inside the normal double range, is
 *       spelled from its own digits: for such a decimal the double it denotes has exactly those
 *       digits as its shortest round-trip form (15 digits always round-trip), so its ECMAScript
 *       spelling follows from the digits and the exponent alone ({@code 1.0}, {@code 1} and
 *       {@code 1e0} are all {@code 1}; {@code 1e21} is {@code 1e+21}); longer or extreme numbers
 *       go through the IEEE-754 double and the ECMAScript formatter;</li>
 *   <li>each object's members are written in input order while their byte ranges are noted; an
 *       object whose names are out of order has only its own bytes rearranged into the UTF-16
 *       code-unit order JCS asks for. Already-sorted objects are never copied.</li>
 * </ul>
 * Anything that is not I-JSON makes {@link #canonicalize} fail, and the caller falls back to the
 * raw bytes: malformed JSON, invalid UTF-8, duplicate member names, trailing content, numbers
 * beyond double range, nesting deeper than {@value #MAX_DEPTH}. A lone surrogate escape
 * (backslash-ud800) is accepted and written in its 3-byte form, which no valid text produces, so it
 * cannot collide with a real character.
 */
@Internal
public final class JsonCanonicalizer {

    /** The deepest nesting canonicalized (as Jackson's default limit); deeper input is fingerprinted raw. */
    static final int MAX_DEPTH = 1000;

    private JsonCanonicalizer() {
    }

    /** Thrown when the input is not JSON that JCS can canonicalize. */
    static final class NotCanonicalizableException extends Exception {
        NotCanonicalizableException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }


    /**
     * Reads {@code json[0, length)}, leaves out what {@code ignored} names, and appends the
     * canonical UTF-8 form to {@code out}. When it fails, {@code out} is as it was.
     */
    static void canonicalize(byte[] json, int length, JsonPointers ignored, CanonicalBuffer out)
        throws NotCanonicalizableException {
        int start = out.length();
        out.reserve(length + 32); // the canonical text is rarely longer than the input
        try {
            JsonScanner s = new JsonScanner(json, length, out);
            s.skipWhitespace();
            if (s.pos >= length) {
                throw new NotCanonicalizableException("empty JSON text", null);
            }
            s.value(ignored.root, 0);
            s.skipWhitespace();
            if (s.pos != length) {
                throw new NotCanonicalizableException("content after the JSON value", null);
            }
        } catch (NotCanonicalizableException e) {
            out.truncate(start);
            throw e;
        } catch (RuntimeException | StackOverflowError e) {
            out.truncate(start);
            throw new NotCanonicalizableException("not canonicalizable JSON", e);
        }
        if (ignored.whole) {
            out.truncate(start);
            out.ascii("null");
        }
    }

    /** The canonical text of {@code json}; for tests and tools. */
    static String canonicalString(byte[] json) throws NotCanonicalizableException {
        CanonicalBuffer out = new CanonicalBuffer();
        canonicalize(json, json.length, JsonPointers.NONE, out);
        return new String(out.bytes, 0, out.length, StandardCharsets.UTF_8);
    }

}
