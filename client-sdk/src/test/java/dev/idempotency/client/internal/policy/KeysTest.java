package dev.idempotency.client.internal.policy;

import dev.idempotency.client.InvalidIdempotencyKeyException;
import dev.idempotency.client.KeyFormat;
import dev.idempotency.server.internal.fingerprint.KeyHeader;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeysTest {

    @Test
    @DisplayName("C1/S5: a caller key must be 1-255 printable ASCII characters; the message never repeats it")
    void validation() {
        assertThat(Keys.validate("order-4711", KeyFormat.QUOTED)).isEqualTo("order-4711");
        assertThat(Keys.validate("x".repeat(255), KeyFormat.QUOTED)).hasSize(255);
        assertThatThrownBy(() -> Keys.validate("", KeyFormat.QUOTED))
            .isInstanceOf(InvalidIdempotencyKeyException.class).hasMessageContaining("empty");
        assertThatThrownBy(() -> Keys.validate("x".repeat(256), KeyFormat.QUOTED))
            .isInstanceOf(InvalidIdempotencyKeyException.class).hasMessageContaining("256 characters");
        assertThatThrownBy(() -> Keys.validate("caf\u00e9-secret", KeyFormat.QUOTED))
            .isInstanceOf(InvalidIdempotencyKeyException.class).hasMessageContaining("U+00E9 at index 3")
            .hasMessageNotContaining("secret");
        assertThatThrownBy(() -> Keys.validate("a\tb", KeyFormat.QUOTED)).isInstanceOf(InvalidIdempotencyKeyException.class);
    }

    @Test
    @DisplayName("C2: quoted by default, with \\\" and \\\\ escaped; the server parses it back to the same key")
    void quoted() {
        String key = "a \"b\" \\c, d";
        String header = Keys.headerValue(Keys.validate(key, KeyFormat.QUOTED), KeyFormat.QUOTED);
        assertThat(header).isEqualTo("\"a \\\"b\\\" \\\\c, d\"");
        assertThat(KeyHeader.parse(header, true).value()).isEqualTo(key);
    }

    @Test
    @DisplayName("C2: bare when set; a key that cannot be sent bare is rejected before sending")
    void bare() {
        String key = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assertThat(Keys.headerValue(Keys.validate(key, KeyFormat.BARE), KeyFormat.BARE)).isEqualTo(key);
        assertThat(KeyHeader.parse(key, false).value()).isEqualTo(key);
        for (String bad : new String[] {"a b", "a\"b", "a\\b", "a,b"}) {
            assertThatThrownBy(() -> Keys.validate(bad, KeyFormat.BARE))
                .isInstanceOf(InvalidIdempotencyKeyException.class).hasMessageContaining("bare token");
        }
    }

    @Test
    @DisplayName("C1/C2/S5: the client refuses exactly the keys the server would refuse, in both forms")
    void sameRulesAsTheServer() {
        for (String key : java.util.List.of("", "k", "x".repeat(255), "x".repeat(256), "a b", "a\"b", "a\\b", "a,b",
            "a\tb", "a\u007fb", "caf\u00e9", "~!#$%&'*+-.^_`|", "order-4711")) {
            boolean serverQuoted = accepts(() -> KeyHeader.parse(new KeyHeader(key).toHeaderValue(), true));
            boolean serverBare = accepts(() -> KeyHeader.parse(key, false));
            assertThat(accepts(() -> Keys.validate(key, KeyFormat.QUOTED))).as("quoted %s", key).isEqualTo(serverQuoted);
            assertThat(accepts(() -> Keys.validate(key, KeyFormat.BARE))).as("bare %s", key).isEqualTo(serverBare);
        }
    }

    private static boolean accepts(Runnable r) {
        try {
            r.run();
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
