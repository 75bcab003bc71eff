package dev.idempotency.server;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S7: our streaming RFC 8785 writer against the reference implementation (erdtman's
 * {@code JsonCanonicalizer}) on seeded random documents: nesting, member order, every kind of
 * character (controls, escapes, 2-, 3- and 4-byte UTF-8, surrogate pairs) and numbers of every
 * shape (integers, fractions, exponents, negative zero, values near 2^53 and the double limits).
 */
class JsonCanonicalizerDifferentialTest {

    private static final String[] NUMBERS = {"0", "-0", "1", "-1", "1.0", "1e2", "1E+2", "100e-2", "0.1", "-0.000001",
        "1e-7", "123456789012345678901234567890", "9007199254740991", "9007199254740992", "9007199254740993",
        "-9007199254740993", "1e21", "1e20", "999999999999999999999", "4.35", "2e-3", "5e-324", "1.7976931348623157e308",
        "333333333.33333329", "0.000001", "1e-6", "12.50", "-3.14159e+5"};

    @Test
    @DisplayName("S7: canonical form equals the RFC 8785 reference implementation on 2000 random documents")
    void matchesReferenceImplementation() throws Exception {
        Random random = new Random(8785);
        for (int i = 0; i < 2000; i++) {
            String json = "{\"v\":" + value(random, 0) + "}"; // the reference accepts only an object or array at the top
            byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
            String reference = new org.erdtman.jcs.JsonCanonicalizer(bytes).getEncodedString();
            assertThat(JsonCanonicalizer.canonicalString(bytes)).as("document %d: %s", i, json).isEqualTo(reference);
        }
    }

    private static String value(Random r, int depth) {
        int kind = depth > 3 ? 2 + r.nextInt(4) : r.nextInt(6);
        switch (kind) {
            case 0: {
                StringBuilder sb = new StringBuilder("{");
                int n = r.nextInt(6);
                java.util.Set<String> names = new java.util.HashSet<>();
                for (int i = 0; i < n; i++) {
                    String name = string(r);
                    if (!names.add(name)) {
                        continue;
                    }
                    if (sb.length() > 1) {
                        sb.append(r.nextBoolean() ? "," : " ,\n ");
                    }
                    sb.append(quote(name)).append(r.nextBoolean() ? ":" : " : ").append(value(r, depth + 1));
                }
                return sb.append('}').toString();
            }
            case 1: {
                StringBuilder sb = new StringBuilder("[");
                int n = r.nextInt(5);
                for (int i = 0; i < n; i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    sb.append(value(r, depth + 1));
                }
                return sb.append(']').toString();
            }
            case 2:
                return quote(string(r));
            case 3:
                return r.nextInt(3) == 0 ? NUMBERS[r.nextInt(NUMBERS.length)] : randomNumber(r);
            case 4:
                return r.nextBoolean() ? "true" : "false";
            default:
                return "null";
        }
    }

    private static String randomNumber(Random r) {
        switch (r.nextInt(4)) {
            case 0:
                return Long.toString(r.nextLong() >> r.nextInt(64));
            case 1:
                return Double.toString(r.nextDouble() * Math.pow(10, r.nextInt(40) - 20));
            case 2:
                return (r.nextBoolean() ? "-" : "") + r.nextInt(100000) + "." + r.nextInt(1000) + "e" + (r.nextInt(60) - 30);
            default:
                return Double.toString(Double.longBitsToDouble(r.nextLong() & 0x7FEFFFFFFFFFFFFFL));
        }
    }

    private static String string(Random r) {
        StringBuilder sb = new StringBuilder();
        int n = r.nextInt(8);
        for (int i = 0; i < n; i++) {
            switch (r.nextInt(7)) {
                case 0 -> sb.append((char) r.nextInt(0x20));
                case 1 -> sb.append("\"\\/".charAt(r.nextInt(3)));
                case 2 -> sb.append((char) (0x80 + r.nextInt(0x780)));
                case 3 -> sb.append((char) (0x800 + r.nextInt(0xD000)));
                case 4 -> sb.appendCodePoint(0x10000 + r.nextInt(0xFFFFF));
                default -> sb.append((char) (0x20 + r.nextInt(0x5F)));
            }
        }
        return sb.toString();
    }

    /** A JSON string literal that spells characters in several ways (raw, \\n, \\u escapes). */
    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        int i = 0;
        for (int cp : s.codePoints().toArray()) {
            i++;
            if (cp == '"' || cp == '\\') {
                sb.append('\\').appendCodePoint(cp);
            } else if (cp < 0x20 || (cp > 0x7E && i % 3 == 0)) {
                for (char c : Character.toChars(cp)) {
                    sb.append(String.format("\\u%04X", (int) c));
                }
            } else if (cp == '/' && i % 2 == 0) {
                sb.append("\\/");
            } else {
                sb.appendCodePoint(cp);
            }
        }
        return sb.append('"').toString();
    }
}
