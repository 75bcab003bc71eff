package dev.idempotency.server.internal.fingerprint;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
        "333333333.33333329", "0.000001", "1e-6", "12.50", "-3.14159e+5",
        // at the edges of the copied-as-written fast path
        "123456789012345", "1234567890123456", "-123456789012345", "100000000000000000000", "1000000000000000000000",
        "123456789.123456", "1234567890.123456", "0.0000012", "0.00000012", "-0.0", "0.10", "10.010", "0.5", "-0.5",
        "0.0"};

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

    @Test
    @DisplayName("S7: a string's escapes, non-ASCII and control bytes are found at every offset (the scan reads eight"
        + " bytes at a time)")
    void specialBytesAtEveryOffset() throws Exception {
        String[] specials = {"\\\"", "\\\\", "\\n", "\\u00e9", "\u00e9", "\u20ac", "\ud83d\ude00", "\u007f", "~", " ", "!",
            "#", "[", "]", "}", "{"};
        for (int offset = 0; offset < 20; offset++) {
            for (String special : specials) {
                String json = "{\"k" + "n".repeat(offset) + "\":\"" + "a".repeat(offset) + special + "b".repeat(19 - offset)
                    + "\",\"a\":1}";
                byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
                assertThat(JsonCanonicalizer.canonicalString(bytes)).as(json)
                    .isEqualTo(new org.erdtman.jcs.JsonCanonicalizer(bytes).getEncodedString());
            }
            byte[] raw = ("{\"k\":\"" + "a".repeat(offset) + "\u0001b\"}").getBytes(StandardCharsets.UTF_8);
            assertThatThrownBy(() -> JsonCanonicalizer.canonicalString(raw)).as("raw control byte at %d", offset)
                .isInstanceOf(JsonCanonicalizer.NotCanonicalizableException.class);
        }
    }

    @Test
    @DisplayName("S7: malformed numbers are not canonicalized (the body is fingerprinted raw)")
    void malformedNumbersAreRefused() {
        for (String number : new String[] {"00", "-01", "1.", ".5", "1.5e", "1e+", "-", "+1", "0x10", "1.5.2", "--1"}) {
            byte[] json = ("{\"v\":" + number + "}").getBytes(StandardCharsets.UTF_8);
            assertThatThrownBy(() -> JsonCanonicalizer.canonicalString(json)).as(number)
                .isInstanceOf(JsonCanonicalizer.NotCanonicalizableException.class);
        }
    }

    @Test
    @DisplayName("S7: on 20000 mutated (mostly invalid) documents the scanner accepts exactly what the reference"
        + " implementation accepts, with the same canonical form")
    void mutatedDocumentsAgreeWithReference() throws Exception {
        Random random = new Random(7);
        String alphabet = "{}[],:\"\\ \t\n-+.eE0123456789tfnulrsa/u\u00e9\u20ac\ud83d\ude00";
        int bothAccepted = 0;
        for (int i = 0; i < 20_000; i++) {
            StringBuilder doc = new StringBuilder("{\"v\":" + value(random, 0) + "}");
            int mutations = 1 + random.nextInt(3);
            for (int m = 0; m < mutations && doc.length() > 2; m++) {
                int at = 1 + random.nextInt(doc.length() - 2);
                char c = alphabet.charAt(random.nextInt(alphabet.length()));
                switch (random.nextInt(3)) {
                    case 0 -> doc.insert(at, c);
                    case 1 -> doc.deleteCharAt(at);
                    default -> doc.setCharAt(at, c);
                }
            }
            byte[] bytes = doc.toString().getBytes(StandardCharsets.UTF_8);
            if (random.nextInt(20) == 0) { // now and then a byte that is not UTF-8 at all
                bytes[1 + random.nextInt(bytes.length - 2)] = (byte) (0x80 + random.nextInt(0x80));
            }
            String ours;
            try {
                ours = JsonCanonicalizer.canonicalString(bytes);
            } catch (JsonCanonicalizer.NotCanonicalizableException e) {
                ours = null;
            }
            // acceptance: what Jackson's strict parser accepts (RFC 8259; duplicate names and numbers
            // beyond double range are not I-JSON); the canonical form: the reference implementation's
            Boolean valid = strictlyValid(bytes);
            if (valid == null) {
                continue;
            }
            assertThat(ours != null).as("accepted? document %d: %s (bytes %s)", i, doc,
                java.util.HexFormat.of().formatHex(bytes)).isEqualTo(valid);
            if (ours == null) {
                continue;
            }
            String reference = new org.erdtman.jcs.JsonCanonicalizer(bytes).getEncodedString();
            if (reference.codePoints().anyMatch(c -> c >= 0xD800 && c <= 0xDFFF)) {
                continue; // a lone surrogate: the reference keeps it in a String, we write its 3-byte form
            }
            assertThat(ours).as("document %d: %s", i, doc).isEqualTo(reference);
            if (ours != null) {
                bothAccepted++;
            }
        }
        assertThat(bothAccepted).as("valid documents among the mutations").isGreaterThan(1_000);
    }

    /**
     * Jackson's strict parse, with duplicate detection, and every number a finite double;
     * {@code null} when Jackson cannot tell (see below).
     */
    private static Boolean strictlyValid(byte[] bytes) {
        com.fasterxml.jackson.core.JsonFactory strict = com.fasterxml.jackson.core.JsonFactory.builder()
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
        try (com.fasterxml.jackson.core.JsonParser p = strict.createParser(bytes)) {
            com.fasterxml.jackson.core.JsonToken t;
            while ((t = p.nextToken()) != null) {
                if (t.isNumeric() && !Double.isFinite(p.getDoubleValue())) {
                    return Boolean.FALSE;
                }
                if (t == com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
                    p.getText(); // decodes (and so validates) the string
                }
            }
            return Boolean.TRUE;
        } catch (java.io.IOException | RuntimeException e) {
            // Jackson rejects a lone surrogate escape in a member name (not in a value), and stops
            // there; JCS, and we, accept one anywhere: no verdict on such a document
            return e.getMessage() != null && e.getMessage().contains("surrogate") && e.getMessage().contains("field name") ? null : Boolean.FALSE;
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
