package dev.idempotency.server.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** CONTRACT S9: what the in-memory store keeps is replayed exactly; its encoding loses nothing. */
class StoredResponseCodecTest {

    @Test
    void headersInOrderWithNonAsciiValuesAndBinaryBodyRoundTrip() {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Location", List.of("/v1/orders/ü-42"));
        headers.put("Set-Cookie", List.of("a=1", "b=2", ""));
        headers.put("X-Empty", List.of());
        headers.put("Content-Type", List.of("application/json"));
        byte[] body = new byte[70_000];
        new Random(7).nextBytes(body);
        StoredResponse original = new StoredResponse(201, headers, body, false);

        StoredResponse decoded = StoredResponseCodec.decode(StoredResponseCodec.encode(original));

        assertEquals(original, decoded);
        assertEquals(new ArrayList<>(headers.keySet()), new ArrayList<>(decoded.headers().keySet()));
        assertArrayEquals(body, decoded.body());
    }

    @Test
    void omittedAndEmptyBodiesKeepTheirMeaning() {
        StoredResponse omitted = new StoredResponse(599, Map.of(), new byte[0], true);
        StoredResponse empty = new StoredResponse(100, Map.of(), new byte[0], false);

        StoredResponse a = StoredResponseCodec.decode(StoredResponseCodec.encode(omitted));
        StoredResponse b = StoredResponseCodec.decode(StoredResponseCodec.encode(empty));

        assertTrue(a.bodyOmitted());
        assertEquals(599, a.status());
        assertEquals(empty, b);
        assertEquals(0, b.bodyLength());
    }

    @Test
    void textBodyStaysByteIdentical() {
        byte[] body = "{\"emoji\":\"\uD83D\uDE00\",\"n\":1.50}".getBytes(StandardCharsets.UTF_8);
        StoredResponse original = new StoredResponse(200, Map.of("ETag", List.of("\"v1\"")), body, false);

        assertArrayEquals(body, StoredResponseCodec.decode(StoredResponseCodec.encode(original)).body());
    }

    @Test
    void aPrefixIsKeptAndTheResponseDecodedAfterIt() {
        byte[] source = {1, 2, 3, 4, 5, 6, 7}; // the prefix is its first five bytes
        StoredResponse original = new StoredResponse(409, Map.of("Retry-After", List.of("2")),
            "busy".getBytes(StandardCharsets.UTF_8), false);

        byte[] encoded = StoredResponseCodec.encode(source, 5, original);

        assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, java.util.Arrays.copyOf(encoded, 5));
        assertEquals(StoredResponseCodec.encode(original).length + 5, encoded.length);
        assertEquals(original, StoredResponseCodec.decode(encoded, 5));
    }

    @Test
    void anEncodedStringIsExactlyItsUtf8Bytes() {
        // a non-ASCII name, a character of three bytes, one of four, and a lone surrogate (which
        // UTF-8 encodes as '?', the length written must be that of the bytes written)
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("X-Grüße", List.of("€", "\uD83D\uDE00", "a\uD800b", "plain"));
        StoredResponse original = new StoredResponse(200, headers, new byte[] {42}, false);

        byte[] encoded = StoredResponseCodec.encode(original);
        StoredResponse decoded = StoredResponseCodec.decode(encoded);

        int expected = 7 + 8 + "X-Grüße".getBytes(StandardCharsets.UTF_8).length + 1;
        for (String v : headers.get("X-Grüße")) {
            expected += 4 + v.getBytes(StandardCharsets.UTF_8).length;
        }
        assertEquals(expected, encoded.length);
        assertEquals(List.of("€", "\uD83D\uDE00", "a?b", "plain"), decoded.headers().get("X-Grüße"));
        assertArrayEquals(new byte[] {42}, decoded.body());
    }
}
