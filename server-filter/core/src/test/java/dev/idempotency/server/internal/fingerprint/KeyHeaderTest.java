package dev.idempotency.server.internal.fingerprint;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeyHeaderTest {

    @Test
    @DisplayName("S4: an sf-string is unquoted and its \\\" and \\\\ escapes decoded")
    void parsesSfString() {
        assertThat(KeyHeader.parse("\"abc\"", true).value()).isEqualTo("abc");
        assertThat(KeyHeader.parse("\"a\\\"b\\\\c\"", true).value()).isEqualTo("a\"b\\c");
        assertThat(KeyHeader.parse("  \"with spaces inside\"  ", true).value()).isEqualTo("with spaces inside");
    }

    @Test
    @DisplayName("S4: a bare token is the same key as its quoted form, unless strict")
    void bareToken() {
        String uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assertThat(KeyHeader.parse(uuid, false)).isEqualTo(KeyHeader.parse("\"" + uuid + "\"", false));
        assertThatThrownBy(() -> KeyHeader.parse(uuid, true))
            .isInstanceOf(MalformedKeyException.class)
            .hasMessageContaining("quoted");
    }

    @Test
    @DisplayName("S5: 1 to 255 characters: 255 accepted, 256 and empty rejected")
    void length() {
        assertThat(KeyHeader.parse("\"" + "k".repeat(255) + "\"", true).value()).hasSize(255);
        assertThatThrownBy(() -> KeyHeader.parse("\"" + "k".repeat(256) + "\"", true))
            .hasMessageContaining("255");
        assertThatThrownBy(() -> KeyHeader.parse("k".repeat(256), false)).hasMessageContaining("255");
        assertThatThrownBy(() -> KeyHeader.parse("\"\"", true)).hasMessageContaining("empty");
        assertThatThrownBy(() -> KeyHeader.parse("", false)).hasMessageContaining("empty");
    }

    @ParameterizedTest(name = "S5: {0} is rejected")
    @ValueSource(strings = {"\"caf\u00e9\"", "caf\u00e9", "\"tab\there\"", "\"open", "\"bad\\n\"", "\"a\"\"b\"",
        "\"a\";x=1", "a b", "a,b", "a\"b", "a\\b", "\"\\"})
    void rejectsMalformed(String value) {
        assertThatThrownBy(() -> KeyHeader.parse(value, false))
            .isInstanceOf(MalformedKeyException.class);
    }

    @Test
    @DisplayName("S5: error messages and toString never echo the key")
    void neverEchoesKey() {
        String secret = "s3cr3t-key-value";
        assertThatThrownBy(() -> KeyHeader.parse("\"" + secret + "\u00e9\"", false))
            .message().doesNotContain(secret);
        assertThat(KeyHeader.parse(secret, false).toString()).doesNotContain(secret);
    }

    @Test
    @DisplayName("C2/S4: toHeaderValue round-trips through parse")
    void headerValueRoundTrip() {
        KeyHeader key = new KeyHeader("a\"b\\c d");
        assertThat(key.toHeaderValue()).isEqualTo("\"a\\\"b\\\\c d\"");
        assertThat(KeyHeader.parse(key.toHeaderValue(), true)).isEqualTo(key);
    }

    @Test
    @DisplayName("S4: every printable key round-trips, with and without escapes, and only they parse")
    void randomKeysRoundTrip() {
        java.util.Random random = new java.util.Random(42);
        for (int n = 0; n < 20_000; n++) {
            char[] chars = new char[1 + random.nextInt(40)];
            for (int i = 0; i < chars.length; i++) {
                // mostly printable ASCII, quotes and backslashes often, now and then a control or non-ASCII character
                int pick = random.nextInt(20);
                chars[i] = pick == 0 ? '"' : pick == 1 ? '\\' : pick == 2 ? (char) random.nextInt(0x20)
                    : pick == 3 ? (char) (0x7F + random.nextInt(0x100)) : (char) (0x20 + random.nextInt(0x5F));
            }
            String value = new String(chars);
            boolean printable = value.chars().allMatch(c -> c >= 0x20 && c <= 0x7E);
            String header = '"' + value.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
            if (printable) {
                assertThat(KeyHeader.parse(header, true).value()).isEqualTo(value);
            } else {
                assertThatThrownBy(() -> KeyHeader.parse(header, true)).isInstanceOf(MalformedKeyException.class);
            }
        }
    }
}
