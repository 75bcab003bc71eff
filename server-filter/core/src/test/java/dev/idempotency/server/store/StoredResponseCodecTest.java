package dev.idempotency.server.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * CONTRACT S9 and S17: what the in-memory and Redis stores keep is replayed exactly, their one
 * encoding loses nothing, and bytes it did not write are refused with a clear error, never read
 * as a wrong response.
 */
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
    void aReasonPhraseOfTheRoutesOwnRoundTripsAndTheStandardOneCostsNothing() {
        Map<String, List<String>> headers = Map.of("Content-Type", List.of("text/plain"));
        byte[] body = "fine".getBytes(StandardCharsets.UTF_8);
        StoredResponse standard = new StoredResponse(200, headers, body, false);
        StoredResponse own = new StoredResponse(200, headers, body, false, "Fine Thanks");

        byte[] ownBytes = StoredResponseCodec.encode(own);
        StoredResponse decoded = StoredResponseCodec.decode(ownBytes);

        assertEquals(own, decoded);
        assertEquals("Fine Thanks", decoded.reason());
        assertEquals(StoredResponseCodec.encode(standard).length + 4 + "Fine Thanks".length(), ownBytes.length);
        assertEquals(null, StoredResponseCodec.decode(StoredResponseCodec.encode(standard)).reason());
        assertEquals(4, StoredResponseCodec.bodyLength(ownBytes, 0, ownBytes.length));
        assertThatThrownBy(() -> new StoredResponse(200, headers, body, false, "two\r\nlines"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reason phrase");
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

        assertArrayEquals(new byte[] {1, 2, 3, 4, 5}, Arrays.copyOf(encoded, 5));
        assertEquals(StoredResponseCodec.encode(original).length + 5, encoded.length);
        assertEquals(original, StoredResponseCodec.decode(encoded, 5));
    }

    @Test
    void statusAndBodyLengthAreReadFromTheHeadAlone() {
        StoredResponse kept = new StoredResponse(201, Map.of("Location", List.of("/v1/orders/ü-42")),
            "{\"id\":42}".getBytes(StandardCharsets.UTF_8), false);
        StoredResponse omitted = new StoredResponse(200, Map.of(), new byte[0], true);
        byte[] encoded = StoredResponseCodec.encode(new byte[] {9, 9, 9}, 3, kept);
        byte[] head = Arrays.copyOf(encoded, 3 + 7); // what a store fetches to inspect a record

        assertEquals(201, StoredResponseCodec.status(head, 3));
        assertEquals(kept.bodyLength(), StoredResponseCodec.bodyLength(head, 3, encoded.length - 3));
        assertEquals(-1, StoredResponseCodec.bodyLength(StoredResponseCodec.encode(omitted), 0,
            StoredResponseCodec.encode(omitted).length));
        assertThatThrownBy(() -> StoredResponseCodec.status(head, 4))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 7 needed");
        assertThatThrownBy(() -> StoredResponseCodec.bodyLength(head, 3, 10))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("header block's length");
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

        int expected = 7 + 5 + 8 + "X-Grüße".getBytes(StandardCharsets.UTF_8).length + 1;
        for (String v : headers.get("X-Grüße")) {
            expected += 4 + v.getBytes(StandardCharsets.UTF_8).length;
        }
        assertEquals(expected, encoded.length);
        assertEquals(List.of("€", "\uD83D\uDE00", "a?b", "plain"), decoded.headers().get("X-Grüße"));
        assertArrayEquals(new byte[] {42}, decoded.body());
    }

    @Test
    void theLayoutIsTheDocumentedOne() throws IOException {
        // written field by field as the class javadoc (and RedisIdempotencyStore's, whose
        // records hold it) lays it out, with DataOutputStream as the first Redis store did
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/json"));
        headers.put("Link", List.of("</a>", "</b>"));
        byte[] body = "{\"id\":1}".getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream block = new ByteArrayOutputStream();
        DataOutputStream b = new DataOutputStream(block);
        b.writeByte(1);
        b.writeInt(2);
        writeString(b, "Content-Type");
        b.writeInt(1);
        writeString(b, "application/json");
        writeString(b, "Link");
        b.writeInt(2);
        writeString(b, "</a>");
        writeString(b, "</b>");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(all);
        out.writeShort(201);
        out.writeByte(0);
        out.writeInt(block.size());
        out.write(block.toByteArray());
        out.write(body);

        byte[] encoded = StoredResponseCodec.encode(new StoredResponse(201, headers, body, false));

        assertArrayEquals(all.toByteArray(), encoded);
        assertEquals(new StoredResponse(201, headers, body, false), StoredResponseCodec.decode(all.toByteArray(), 0));
    }

    @Test
    void bytesItDidNotWriteAreRefusedWithWhatIsWrong() {
        byte[] good = StoredResponseCodec.encode(new StoredResponse(200, Map.of("ETag", List.of("\"v1\"")),
            new byte[] {1, 2, 3}, false));
        int block = 7;

        assertMalformed(Arrays.copyOf(good, 11), "bytes long");
        assertMalformed(with(good, 2, 2), "omitted flag is 2");
        assertMalformed(with(good, 6, 127), "header block's length");
        assertMalformed(with(good, block, 4), "unknown header block version 4");
        assertMalformed(with(good, block + 4, 9), "bad header count 9");
        assertMalformed(with(good, block + 8, 100), "a string of 100 bytes");
        byte[] shortBlock = with(good, 6, good[6] - 1); // the last byte of the block becomes the body's
        assertMalformed(shortBlock, "string of");
        byte[] longBlock = with(good, 6, good[6] + 1); // the body's first byte joins the block
        assertMalformed(longBlock, "left over");
        assertThatThrownBy(() -> StoredResponseCodec.decode(with(good, 2, 1), 0))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("omitted body must be empty");
        assertThatThrownBy(() -> StoredResponseCodec.decode(with(good, 0, 9), 0))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("status must be 100-599");
        assertMalformed(good, good.length, "0 bytes long");
    }

    @Test
    @DisplayName("O4: the executing run's traceparent round-trips, with and without a reason phrase; a damaged one is refused")
    void traceparentRoundTrips() {
        String trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        for (String reason : new String[] {null, "Fine Thanks"}) {
            StoredResponse r = new StoredResponse(200, Map.of("ETag", List.of("\"v1\"")), new byte[] {1, 2, 3}, false,
                reason, trace);
            byte[] bytes = StoredResponseCodec.encode(r);
            assertThat(StoredResponseCodec.decode(bytes, 0)).isEqualTo(r);
            assertThat(bytes[7]).isEqualTo((byte) StoredResponseCodec.HEADERS_VERSION_WITH_TRACE);
            assertThat(StoredResponseCodec.bodyLength(bytes, 0, bytes.length)).isEqualTo(3);
            byte[] damaged = bytes.clone();
            damaged[7 + 1 + 4 + 5] = 'X'; // inside the trace id
            assertMalformed(damaged, "bad traceparent");
        }
        assertThatThrownBy(() -> new StoredResponse(200, Map.of(), new byte[0], false, null,
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("traceparent");
    }

    @Test
    void damagedBytesNeverDecodeToAnythingButAResponseOrIllegalArgument() {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/json"));
        headers.put("Set-Cookie", List.of("a=1", "b=2"));
        byte[] good = StoredResponseCodec.encode(new StoredResponse(201, headers, "{\"a\":[1,2]}".getBytes(), false));
        Random random = new Random(11);
        int refused = 0;
        for (int i = 0; i < 20_000; i++) {
            byte[] damaged = random.nextBoolean()
                ? Arrays.copyOf(good, random.nextInt(good.length))
                : with(good, random.nextInt(good.length), random.nextInt(256));
            try {
                StoredResponseCodec.decode(damaged, 0);
            } catch (IllegalArgumentException e) {
                refused++;
            }
        }
        assertThat(refused).as("most damage is noticed").isGreaterThan(10_000);
    }

    private static void assertMalformed(byte[] bytes, String what) {
        assertMalformed(bytes, 0, what);
    }

    private static void assertMalformed(byte[] bytes, int offset, String what) {
        assertThatThrownBy(() -> StoredResponseCodec.decode(bytes, offset))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("not a stored response: ")
            .hasMessageContaining(what);
    }

    private static byte[] with(byte[] bytes, int at, int value) {
        byte[] copy = bytes.clone();
        copy[at] = (byte) value;
        return copy;
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
