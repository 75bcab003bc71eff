package dev.idempotency.server.internal.response;

import io.micronaut.core.convert.ConversionService;
import io.micronaut.http.MutableHttpHeaders;
import io.micronaut.http.netty.NettyHttpHeaders;
import io.micronaut.http.simple.SimpleHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.util.AsciiString;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The header names made once for per-request lookups find the same headers a string would, in
 * any case, in Netty's headers and in any other implementation.
 */
class HeaderNamesTest {

    @Test
    void aTokenBecomesAnAsciiStringWithTheSameText() {
        CharSequence name = HeaderNames.of("Idempotency-Key");
        assertThat(name).isInstanceOf(AsciiString.class);
        String spelling = "Idempotency-Key";
        assertThat(HeaderNames.of(spelling).toString()).isSameAs(spelling); // stored as it is, no copy
        assertThat(name.toString()).isEqualTo("Idempotency-Key");
        assertThat(HeaderNames.CONTENT_TYPE.toString()).isEqualTo("Content-Type");
    }

    @Test
    void aNameThatIsNotAsciiStaysTheStringItWas() {
        assertThat(HeaderNames.of("Schl\u00fcssel")).isEqualTo("Schl\u00fcssel");
    }

    @Test
    void lookupsIgnoreCaseInNettysHeadersAndInOthers() {
        MutableHttpHeaders netty = new NettyHttpHeaders(new DefaultHttpHeaders(), ConversionService.SHARED);
        MutableHttpHeaders simple = new SimpleHttpHeaders(ConversionService.SHARED);
        for (MutableHttpHeaders headers : List.of(netty, simple)) {
            headers.add("idempotency-key", "\"k1\"");
            headers.add("CONTENT-TYPE", "application/json");
            headers.add("Idempotent-Replayed", "true");
            assertThat(headers.getAll(HeaderNames.of("Idempotency-Key"))).containsExactly("\"k1\"");
            assertThat(headers.get(HeaderNames.CONTENT_TYPE)).isEqualTo("application/json");
            assertThat(headers.contains(HeaderNames.of("idempotent-replayed"))).isTrue();
            headers.remove(HeaderNames.of("IDEMPOTENT-REPLAYED"));
            assertThat(headers.contains("Idempotent-Replayed")).isFalse();
        }
    }
}
