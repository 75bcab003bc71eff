package dev.idempotency.server.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** CONTRACT S13: a stored response is an immutable copy of what was sent, headers in the order sent. */
class StoredResponseTest {

    @Test
    void aChangeToWhatItWasMadeFromDoesNotReachIt() {
        List<String> contentType = new ArrayList<>(List.of("application/json"));
        Map<String, List<String>> one = new LinkedHashMap<>();
        one.put("Content-Type", contentType);
        List<String> etag = new ArrayList<>(List.of("\"a\""));
        Map<String, List<String>> three = new LinkedHashMap<>();
        three.put("Location", List.of("/orders/1"));
        three.put("ETag", etag);
        three.put("Content-Type", List.of("application/json"));
        byte[] body = "{}".getBytes(StandardCharsets.UTF_8);

        StoredResponse single = new StoredResponse(201, one, body, false);
        StoredResponse several = new StoredResponse(201, three, body, false);
        contentType.set(0, "text/plain");
        one.put("Location", List.of("/elsewhere"));
        etag.add("\"b\"");
        three.remove("Location");
        body[0] = '[';

        assertEquals(Map.of("Content-Type", List.of("application/json")), single.headers());
        assertEquals(List.of("Location", "ETag", "Content-Type"), new ArrayList<>(several.headers().keySet()));
        assertEquals(List.of("\"a\""), several.headers().get("ETag"));
        assertArrayEquals("{}".getBytes(StandardCharsets.UTF_8), single.body());
    }

    @Test
    void itsHeadersCannotBeChanged() {
        StoredResponse single = new StoredResponse(200, Map.of("ETag", new ArrayList<>(List.of("\"v\""))), new byte[0],
            false);
        Map<String, List<String>> two = new LinkedHashMap<>();
        two.put("ETag", new ArrayList<>(List.of("\"v\"")));
        two.put("Location", new ArrayList<>(List.of("/x")));
        StoredResponse several = new StoredResponse(200, two, new byte[0], false);

        for (StoredResponse r : List.of(single, several)) {
            assertThrows(UnsupportedOperationException.class, () -> r.headers().put("X", List.of()));
            assertThrows(UnsupportedOperationException.class, () -> r.headers().get("ETag").add("\"w\""));
        }
    }

    @Test
    void equalResponsesAreEqualWhateverMapTheyWereMadeFrom() {
        Map<String, List<String>> linked = new LinkedHashMap<>();
        linked.put("Content-Type", Arrays.asList("application/json"));
        StoredResponse a = new StoredResponse(200, linked, new byte[] {1}, false);
        StoredResponse b = new StoredResponse(200, Map.of("Content-Type", List.of("application/json")), new byte[] {1},
            false);

        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
    }

    @Test
    void aNullHeaderValueIsRejectedNamingTheHeader() {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Location", Arrays.asList("/a", null));

        NullPointerException e = assertThrows(NullPointerException.class,
            () -> new StoredResponse(201, headers, new byte[0], false));
        assertTrue(e.getMessage().contains("Location"), e.getMessage());
    }
}
