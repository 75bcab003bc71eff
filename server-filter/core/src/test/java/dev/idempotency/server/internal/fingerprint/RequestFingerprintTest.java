package dev.idempotency.server.internal.fingerprint;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RequestFingerprintTest {

    private static byte[] json(String body) {
        return fp("application/json", body);
    }

    private static byte[] fp(String contentType, String body) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        return RequestFingerprint.of("POST", "/p").compute(contentType, bytes, bytes.length);
    }

    private static String canonical(String json) throws Exception {
        return JsonCanonicalizer.canonicalString(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    @DisplayName("S7: member order, whitespace and number spelling do not change the fingerprint")
    void jsonEquivalence() {
        byte[] base = json("{\"a\":1,\"b\":[true,null,\"x\"],\"c\":{\"d\":100}}");
        assertThat(json("{ \"c\" : { \"d\" : 1e2 } , \"b\" : [ true , null , \"x\" ] , \"a\" : 1.0 }")).isEqualTo(base);
        assertThat(json("{\"a\":1,\"b\":[true,null,\"x\"],\"c\":{\"d\":100.000}}")).isEqualTo(base);
        assertThat(json("{\"a\":2,\"b\":[true,null,\"x\"],\"c\":{\"d\":100}}")).isNotEqualTo(base);
        assertThat(json("{\"a\":1,\"b\":[null,true,\"x\"],\"c\":{\"d\":100}}")).isNotEqualTo(base);
    }

    @Test
    @DisplayName("S7: application/*+json bodies are canonicalised too")
    void plusJson() {
        assertThat(fp("application/merge-patch+json; charset=utf-8", "{\"b\":1,\"a\":2}"))
            .isEqualTo(fp("application/merge-patch+json", "{\"a\":2,\"b\":1}"));
    }

    @ParameterizedTest(name = "S7/RFC 8785: {0} -> {1}")
    @CsvSource(delimiter = '|', value = {
        "{\"numbers\":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}|"
            + "{\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27]}",
        "{\"b\":1,\"a\":2,\"\u20ac\":3,\"\\r\":4,\"1\":5}|{\"\\r\":4,\"1\":5,\"a\":2,\"b\":1,\"\u20ac\":3}",
        "{\"s\":\"\\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}|{\"s\":\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}",
        "[-0,1e21,1e-7,0.000001,123456789012345680000]|[0,1e+21,1e-7,0.000001,123456789012345680000]",
        "{\"\ufb33\":2,\"\ud83d\ude00\":1}|{\"\ud83d\ude00\":1,\"\ufb33\":2}"
    })
    void rfc8785Vectors(String input, String expected) throws Exception {
        assertThat(canonical(input)).isEqualTo(expected);
    }

    @Test
    @DisplayName("S7: JSON that does not parse, or has duplicate members, falls back to raw bytes")
    void invalidJsonIsRaw() {
        assertThat(json("{\"a\":1,")).isNotEqualTo(json("{\"a\":1 ,"));
        assertThat(json("{\"a\":1,\"a\":1}")).isNotEqualTo(json("{\"a\":1}"));
        assertThat(json("{\"a\":1} trailing")).isNotEqualTo(json("{\"a\":1}"));
        assertThat(json("{\"a\":1e999}")).isNotEqualTo(json("{\"a\":1e+999}"));
    }

    @Test
    @DisplayName("S7: other media types are fingerprinted as raw bytes")
    void rawBytes() {
        assertThat(fp("text/plain", "{\"a\":1}")).isNotEqualTo(fp("text/plain", "{ \"a\":1}"));
        assertThat(fp(null, "abc")).isEqualTo(fp("application/octet-stream", "abc"));
        assertThat(fp("text/plain", "{\"a\":1}")).isNotEqualTo(json("{\"a\":1}"));
    }

    @Test
    @DisplayName("S7: form bodies are decoded and sorted by name, then value")
    void formBodies() {
        String form = "application/x-www-form-urlencoded";
        assertThat(fp(form, "b=2&a=1&a=0")).isEqualTo(fp(form, "a=0&a=1&b=2"));
        assertThat(fp(form, "name=J%C3%BCrgen+M")).isEqualTo(fp(form, "name=J\u00fcrgen%20M"));
        assertThat(fp(form, "a=1&b=2")).isNotEqualTo(fp(form, "a=1&b=3"));
        assertThat(fp(form, "a=%zz")).isNotEqualTo(fp(form, "a=%zy"));
    }

    @Test
    @DisplayName("S7: method, path, query and configured headers are all part of the fingerprint")
    void requestParts() {
        byte[] body = "{}".getBytes();
        byte[] base = RequestFingerprint.of("POST", "/p").query("a", List.of("1", "2")).query("b", List.of("x"))
            .compute("application/json", body, body.length);
        assertThat(RequestFingerprint.of("POST", "/p").query("b", List.of("x")).query("a", List.of("2", "1"))
            .compute("application/json", body, body.length)).isEqualTo(base);
        assertThat(RequestFingerprint.of("PATCH", "/p").query("a", List.of("1", "2")).query("b", List.of("x"))
            .compute("application/json", body, body.length)).isNotEqualTo(base);
        assertThat(RequestFingerprint.of("POST", "/q").query("a", List.of("1", "2")).query("b", List.of("x"))
            .compute("application/json", body, body.length)).isNotEqualTo(base);
        assertThat(RequestFingerprint.of("POST", "/p").query("a", List.of("1", "2")).query("b", List.of("x"))
            .header("Accept", List.of("text/csv")).compute("application/json", body, body.length)).isNotEqualTo(base);
        // length prefixes: moving a character between fields changes the fingerprint
        assertThat(RequestFingerprint.of("POST", "/p").query("ab", List.of("c")).compute(null, body, body.length))
            .isNotEqualTo(RequestFingerprint.of("POST", "/p").query("a", List.of("bc")).compute(null, body, body.length));
    }

    @Test
    @DisplayName("S7: a fingerprint is SHA-256 of the documented fields, with and without query and headers"
        + " (records already stored must keep matching)")
    void fingerprintLayoutIsStable() throws Exception {
        byte[] body = "{ \"b\": 1, \"a\": [true, 1.0] }".getBytes(StandardCharsets.UTF_8);
        // the request's parts alone: no query, no header (counts of zero), the canonical JSON body
        Layout bare = new Layout().scopeOfNone().text("POST").text("/p").count(0).count(0);
        bare.out.write('j');
        bare.out.write("{\"a\":[true,1],\"b\":1}".getBytes(StandardCharsets.UTF_8));
        assertThat(RequestFingerprint.of("post", "/p").compute("application/json; charset=utf-8", body, body.length))
            .isEqualTo(bare.fingerprint());
        // with a query (pairs sorted by name, then value) and a header (lower-cased name, its values as sent)
        Layout full = new Layout().scopeOfNone().text("POST").text("/p")
            .count(3).text("a").text("1").text("a").text("2").text("b").text("x")
            .count(1).text("accept").count(2).text("text/csv").text("*/*");
        full.out.write('r');
        full.out.write(body);
        assertThat(RequestFingerprint.of("POST", "/p").query("b", List.of("x")).query("a", List.of("2", "1"))
            .header("Accept", List.of("text/csv", "*/*")).compute("text/plain", body, body.length))
            .isEqualTo(full.fingerprint());
    }

    /** The fingerprint's input written field by field, independently of the code under test. */
    private static final class Layout {
        final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        final java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);

        /** The tag and the empty anonymous scope of a fingerprint computed outside any scope. */
        Layout scopeOfNone() throws java.io.IOException {
            text("idempotency-key/" + RequestFingerprint.VERSION);
            out.write(RequestDigest.CALLER_ANONYMOUS);
            return text("").text("").text("").text("");
        }

        Layout text(String field) throws java.io.IOException {
            byte[] b = field.getBytes(StandardCharsets.UTF_8);
            out.writeInt(b.length);
            out.write(b);
            return this;
        }

        Layout count(int n) throws java.io.IOException {
            out.writeInt(4);
            out.writeInt(n);
            return this;
        }

        byte[] fingerprint() throws Exception {
            byte[] hash = java.security.MessageDigest.getInstance("SHA-256").digest(bytes.toByteArray());
            byte[] fp = new byte[RequestFingerprint.LENGTH];
            fp[0] = RequestFingerprint.VERSION;
            System.arraycopy(hash, 0, fp, 1, hash.length);
            return fp;
        }
    }

    @Test
    @DisplayName("S7: ignored JSON Pointers remove members, with ~0/~1 escapes and array indexes")
    void ignoredPointers() {
        byte[] a = "{\"x\":1,\"meta\":{\"at\":\"1\",\"a/b\":1,\"t~\":2},\"list\":[1,2,3]}".getBytes();
        byte[] b = "{\"x\":1,\"meta\":{\"at\":\"2\",\"a/b\":9,\"t~\":7},\"list\":[1,5,3]}".getBytes();
        List<String> pointers = List.of("/meta/at", "/meta/a~1b", "/meta/t~0", "/list/1", "/missing/member");
        assertThat(RequestFingerprint.of("POST", "/p").ignoringJsonPointers(pointers).compute("application/json", a, a.length))
            .isEqualTo(RequestFingerprint.of("POST", "/p").ignoringJsonPointers(pointers).compute("application/json", b, b.length));
        assertThat(RequestFingerprint.of("POST", "/p").compute("application/json", a, a.length))
            .isNotEqualTo(RequestFingerprint.of("POST", "/p").compute("application/json", b, b.length));
    }

    @Test
    @DisplayName("S7: only the first length bytes of the buffer are the body")
    void lengthBounded() {
        byte[] padded = "{\"a\":1}GARBAGE".getBytes();
        assertThat(RequestFingerprint.of("POST", "/p").compute("application/json", padded, 7)).isEqualTo(json("{\"a\":1}"));
    }

    @Test
    @DisplayName("S7: a lone surrogate never collides with another character")
    void loneSurrogate() {
        assertThat(json("{\"a\":\"\\ud800\"}")).isNotEqualTo(json("{\"a\":\"?\"}"));
        assertThat(json("{\"a\":\"\\ud800\"}")).isNotEqualTo(json("{\"a\":\"\\ud801\"}"));
        assertThat(json("{\"a\":\"\\ud83d\\ude00\"}")).isEqualTo(json("{\"a\":\"\ud83d\ude00\"}"));
    }

    @Test
    @DisplayName("S7: large JSON is canonicalized whole (no tree, no value cap); nesting past Jackson's limit is raw")
    void largeAndDeepJson() {
        String large = "[" + "0,".repeat(300_000) + "0]";
        assertThat(json(large)).isEqualTo(json(large.replace(",", " , ")));
        String deep = "[".repeat(2_000) + "]".repeat(2_000);
        assertThat(json(deep)).isNotEqualTo(json(deep.replace("[", " [")));
        assertThat(json(deep)).isEqualTo(json(deep));
    }

    @Test
    @DisplayName("S7: a fingerprint is the version byte and 32 bytes of SHA-256; the scope and key are part of it")
    void versionedAndScoped() {
        byte[] body = "{}".getBytes();
        byte[] fp = RequestFingerprint.of("POST", "/p").compute("application/json", body, body.length);
        assertThat(fp).hasSize(RequestFingerprint.LENGTH);
        assertThat(fp[0]).isEqualTo(RequestFingerprint.VERSION);
        RequestDigest alice = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "alice", "POST", "/p", "k1");
        RequestDigest bob = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "bob", "POST", "/p", "k1");
        assertThat(alice.storeKey()).hasSize(64).isNotEqualTo(bob.storeKey());
        assertThat(alice.fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length))
            .isNotEqualTo(bob.fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length));
        assertThat(RequestDigest.begin(RequestDigest.CALLER_ANONYMOUS, "s", "POST", "/p", "k").storeKey())
            .isEqualTo(RequestDigest.begin(RequestDigest.CALLER_ANONYMOUS, "s", "POST", "/p", "k").storeKey());
        // the caller's kind is part of the scope: a principal named like the anonymous scope is not anonymous
        assertThat(RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "anonymous", "POST", "/p", "k").storeKey())
            .isNotEqualTo(RequestDigest.begin(RequestDigest.CALLER_ANONYMOUS, "anonymous", "POST", "/p", "k").storeKey());
        // fields do not run into each other: ("a", "b/c") is not ("a/b", "c")
        assertThat(RequestDigest.begin(RequestDigest.CALLER_RESOLVED, "a", "POST", "/b/c", "k").storeKey())
            .isNotEqualTo(RequestDigest.begin(RequestDigest.CALLER_RESOLVED, "a/b", "POST", "/c", "k").storeKey());
    }

    @Test
    @DisplayName("S7: a digest finished after its thread began another, or on another thread, is the same digest")
    void digestsDoNotShareState() throws Exception {
        byte[] body = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        RequestDigest alone = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "alice", "POST", "/p", "k1");
        byte[] expected = alone.fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length);

        RequestDigest alice = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "alice", "POST", "/p", "k1");
        RequestDigest bob = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "bob", "POST", "/p", "k1");
        byte[] bobs = bob.fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length);
        assertThat(alice.fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length))
            .isEqualTo(expected).isNotEqualTo(bobs);
        assertThat(alice.storeKey()).isEqualTo(alone.storeKey());

        RequestDigest begunHere = RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "alice", "POST", "/p", "k1");
        byte[][] there = new byte[1][];
        Thread other = new Thread(() -> there[0] = begunHere.fingerprint(RequestFingerprint.of("POST", "/p"),
            "application/json", body, body.length));
        other.start();
        other.join();
        assertThat(there[0]).isEqualTo(expected);
        // an abandoned digest leaves nothing behind for the thread's next one
        RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "mallory", "POST", "/p", "k9");
        assertThat(RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, "alice", "POST", "/p", "k1")
            .fingerprint(RequestFingerprint.of("POST", "/p"), "application/json", body, body.length)).isEqualTo(expected);
    }

    @Test
    @DisplayName("S6: the store key's hex digits are lowercase, two per byte, as HexFormat writes them")
    void hexDigits() {
        java.util.Random random = new java.util.Random(7);
        for (int i = 0; i < 1000; i++) {
            byte[] bytes = new byte[random.nextInt(40)];
            random.nextBytes(bytes);
            assertThat(RequestDigest.hex(bytes)).isEqualTo(java.util.HexFormat.of().formatHex(bytes));
        }
    }

    @Test
    @DisplayName("S6/S7: the store key is SHA-256 of the documented length-prefixed fields, for ASCII, non-ASCII and"
        + " long scopes alike (records already stored must keep matching)")
    void storeKeyLayoutIsStable() throws Exception {
        String longCaller = "caller-".repeat(40); // longer than the digest's buffer
        for (String[] scope : new String[][] {
            {"alice", "/orders/{id}", "k1"},
            {"Zoë", "/bestellungen/{id}", "schlüssel-1"},
            {longCaller, "/p", "k"},
            {"", "", ""}}) {
            java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
            java.io.DataOutputStream out = new java.io.DataOutputStream(expected);
            for (String field : new String[] {"idempotency-key/" + RequestFingerprint.VERSION}) {
                byte[] b = field.getBytes(StandardCharsets.UTF_8);
                out.writeInt(b.length);
                out.write(b);
            }
            out.write(RequestDigest.CALLER_PRINCIPAL);
            for (String field : new String[] {scope[0], "POST", scope[1], scope[2]}) {
                byte[] b = field.getBytes(StandardCharsets.UTF_8);
                out.writeInt(b.length);
                out.write(b);
            }
            String hex = java.util.HexFormat.of().formatHex(
                java.security.MessageDigest.getInstance("SHA-256").digest(expected.toByteArray()));
            assertThat(RequestDigest.begin(RequestDigest.CALLER_PRINCIPAL, scope[0], "POST", scope[1], scope[2]).storeKey())
                .as("store key of %s", List.of(scope)).isEqualTo(hex);
        }
    }

    @Test
    @DisplayName("S7: numbers are spelled from their digits exactly as the ECMAScript double formatter would")
    void numbersFromDigits() throws Exception {
        java.util.Random r = new java.util.Random(8785);
        for (int i = 0; i < 20_000; i++) {
            String n = switch (r.nextInt(4)) {
                case 0 -> Long.toString(r.nextLong() % 1_000_000_000_000_000L);
                case 1 -> (r.nextInt(1000) - 500) + "." + String.format("%0" + (1 + r.nextInt(12)) + "d", r.nextInt(1_000_000));
                case 2 -> (r.nextBoolean() ? "-" : "") + (1 + r.nextInt(999_999_999)) + "e" + (r.nextInt(640) - 320);
                default -> Double.toString(Double.longBitsToDouble(r.nextLong() & 0x7FEFFFFFFFFFFFFFL));
            };
            String doc = "[" + n + "]";
            String expected;
            try {
                expected = new org.erdtman.jcs.JsonCanonicalizer(doc).getEncodedString();
            } catch (java.io.IOException | RuntimeException e) {
                continue; // outside double range: not canonicalizable by the reference either
            }
            assertThat(canonical(doc)).as(n).isEqualTo(expected);
        }
    }
}
