package dev.idempotency.server.internal.response;

import dev.idempotency.server.internal.runtime.RequestLoop;
import io.micronaut.core.annotation.Internal;
import io.netty.util.AsciiString;

/**
 * Header names for the lookups every request makes. Netty's headers hash a name, ignoring case,
 * on every lookup; an {@link AsciiString} keeps that hash, so a name made here once is hashed
 * once. Any other headers implementation takes it as the {@link CharSequence} it is, and
 * without Netty on the class path (it is optional here) a name stays the string it was.
 */
@Internal
public final class HeaderNames {

    /** {@code Content-Type}. */
    public static final CharSequence CONTENT_TYPE = of("Content-Type");

    private HeaderNames() {
    }

    /**
     * @param name a header name: a token, ASCII only (configured names are checked by
     *             {@link Checks#headerName}); any other string is returned as it is
     * @return the name as a {@link CharSequence} whose case-insensitive hash is kept and whose
     *     {@code toString} is {@code name} itself (no copy per call)
     */
    public static CharSequence of(String name) {
        if (!RequestLoop.NETTY) {
            return name;
        }
        for (int i = 0; i < name.length(); i++) {
            if (name.charAt(i) > 0x7f) {
                return name; // AsciiString would keep the low byte of each char: never mangle a name
            }
        }
        return Netty.ascii(name);
    }

    /** Loaded only when Netty is there. */
    private static final class Netty {
        static CharSequence ascii(String name) {
            return AsciiString.cached(name);
        }
    }
}
