package dev.idempotency.server.internal.fingerprint;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CONTRACT S7: a multipart body is fingerprinted by its parts (name, filename, Content-Type,
 * decoded bytes, in order), never by its framing: the boundary every client draws afresh, the
 * preamble, the epilogue, line ends, other part headers. A body that is not the multipart body
 * its Content-Type says is refused with what is wrong.
 */
class MultipartFingerprintTest {

    private static final byte[] FILE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', '-', '-'};

    /** One part: its header lines and its content. */
    record Part(List<String> headers, byte[] content) {
        static Part field(String name, String value) {
            return new Part(List.of("Content-Disposition: form-data; name=\"" + name + "\""),
                value.getBytes(StandardCharsets.UTF_8));
        }

        static Part file(String name, String filename, String type, byte[] content) {
            return new Part(List.of("Content-Disposition: form-data; name=\"" + name + "\"; filename=\"" + filename + "\"",
                "Content-Type: " + type), content);
        }
    }

    private static byte[] multipart(String boundary, String newline, String preamble, String epilogue, Part... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(preamble.getBytes(StandardCharsets.ISO_8859_1));
        for (Part p : parts) {
            out.writeBytes(("--" + boundary + newline).getBytes(StandardCharsets.ISO_8859_1));
            for (String h : p.headers()) {
                out.writeBytes((h + newline).getBytes(StandardCharsets.UTF_8));
            }
            out.writeBytes(newline.getBytes(StandardCharsets.ISO_8859_1));
            out.writeBytes(p.content());
            out.writeBytes(newline.getBytes(StandardCharsets.ISO_8859_1));
        }
        out.writeBytes(("--" + boundary + "--" + newline + epilogue).getBytes(StandardCharsets.ISO_8859_1));
        return out.toByteArray();
    }

    private static byte[] fingerprint(String contentType, byte[] body) {
        return RequestFingerprint.of("POST", "/v1/files").compute(contentType, body, body.length);
    }

    private static byte[] upload(String boundary, Part... parts) {
        return fingerprint("multipart/form-data; boundary=" + boundary, multipart(boundary, "\r\n", "", "", parts));
    }

    private static final Part PURPOSE = Part.field("purpose", "dispute_evidence");
    private static final Part PNG = Part.file("file", "receipt.png", "image/png", FILE);

    @Test
    @DisplayName("S7: the same parts under another boundary, preamble, epilogue or line end are the same request")
    void framingDoesNotMatter() {
        byte[] curl = upload("------------------------d74496d66958873e", PURPOSE, PNG);
        byte[] stripe = upload("b3a1f52c-7e9a-4b6f-9c1d-2f0e8a7d6c5b", PURPOSE, PNG);
        byte[] quoted = fingerprint("multipart/form-data; boundary=\"a b:c\"",
            multipart("a b:c", "\r\n", "a preamble\r\n", "an epilogue", PURPOSE, PNG));
        byte[] bareLf = fingerprint("Multipart/Form-Data;charset=utf-8;Boundary=xyz",
            multipart("xyz", "\n", "", "\n", PURPOSE, PNG));

        assertThat(stripe).isEqualTo(curl);
        assertThat(quoted).isEqualTo(curl);
        assertThat(bareLf).isEqualTo(curl);
    }

    @Test
    @DisplayName("S7: another file, value, filename, part type, name or order is another request")
    void contentMatters() {
        byte[] original = upload("one", PURPOSE, PNG);
        byte[] otherFile = FILE.clone();
        otherFile[5] ^= 1;

        assertThat(upload("two", PURPOSE, Part.file("file", "receipt.png", "image/png", otherFile))).isNotEqualTo(original);
        assertThat(upload("two", Part.field("purpose", "identity_document"), PNG)).isNotEqualTo(original);
        assertThat(upload("two", PURPOSE, Part.file("file", "receipt2.png", "image/png", FILE))).isNotEqualTo(original);
        assertThat(upload("two", PURPOSE, Part.file("file", "receipt.png", "application/octet-stream", FILE)))
            .isNotEqualTo(original);
        assertThat(upload("two", PURPOSE, Part.file("document", "receipt.png", "image/png", FILE))).isNotEqualTo(original);
        assertThat(upload("two", PNG, PURPOSE)).isNotEqualTo(original);
        assertThat(upload("two", PURPOSE)).isNotEqualTo(original);
        // the parts' fields never run into each other: name "ab" + value "c" is not name "a" + value "bc"
        assertThat(upload("x", Part.field("ab", "c"))).isNotEqualTo(upload("x", Part.field("a", "bc")));
    }

    @Test
    @DisplayName("S7: a part's Content-Transfer-Encoding is decoded; other part headers are not content")
    void transferEncodingsAreDecoded() {
        byte[] plain = upload("p", PURPOSE, PNG);
        Part base64 = new Part(List.of("Content-Disposition: form-data; name=\"file\"; filename=\"receipt.png\"",
            "Content-Type: image/png", "Content-Transfer-Encoding: base64", "X-Trace: 42"),
            Base64.getMimeEncoder(8, "\r\n".getBytes(StandardCharsets.ISO_8859_1)).encode(FILE));
        Part text = Part.field("purpose", "caf\u00e9 = ok");
        Part quoted = new Part(List.of("Content-Disposition: form-data; name=\"purpose\"",
            "Content-Transfer-Encoding: Quoted-Printable"), "caf=C3=A9 =3D o=\r\nk".getBytes(StandardCharsets.ISO_8859_1));

        assertThat(upload("q", PURPOSE, base64)).isEqualTo(plain);
        assertThat(upload("q", quoted)).isEqualTo(upload("r", text));
    }

    @Test
    @DisplayName("S7: filename* (RFC 5987) and folded header lines are read; multipart/mixed parts without names count too")
    void headerForms() {
        Part folded = new Part(List.of("Content-Disposition: form-data;", "\tname=\"purpose\""),
            "dispute_evidence".getBytes(StandardCharsets.UTF_8));
        assertThat(upload("f", folded, PNG)).isEqualTo(upload("g", PURPOSE, PNG));

        byte[] mixed = multipart("m", "\r\n", "", "", new Part(List.of("Content-Type: text/plain"),
            "one".getBytes(StandardCharsets.UTF_8)), new Part(List.of(), new byte[0]));
        byte[] mixedAgain = multipart("n", "\r\n", "", "", new Part(List.of("Content-Type: text/plain"),
            "one".getBytes(StandardCharsets.UTF_8)), new Part(List.of(), new byte[0]));
        assertThat(fingerprint("multipart/mixed; boundary=m", mixed))
            .isEqualTo(fingerprint("multipart/mixed; boundary=n", mixedAgain));
    }

    @Test
    @DisplayName("S7: a body that is not multipart as its Content-Type says is refused, saying what is wrong")
    void malformedBodiesAreRefused() {
        byte[] good = multipart("b", "\r\n", "", "", PURPOSE, PNG);
        assertThatThrownBy(() -> fingerprint("multipart/form-data", good))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("needs a boundary parameter");
        assertThatThrownBy(() -> fingerprint("multipart/form-data; boundary=other", good))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("has no line \"--other\"");
        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 8);
        assertThatThrownBy(() -> fingerprint("multipart/form-data; boundary=b", truncated))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("ends inside part 2");
        byte[] noBlankLine = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n".getBytes(StandardCharsets.ISO_8859_1);
        assertThatThrownBy(() -> fingerprint("multipart/form-data; boundary=b", noBlankLine))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("do not end with a blank line");
        byte[] noColon = "--b\r\nnot a header\r\n\r\nx\r\n--b--".getBytes(StandardCharsets.ISO_8859_1);
        assertThatThrownBy(() -> fingerprint("multipart/form-data; boundary=b", noColon))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("without a name and a colon");
        byte[] badBase64 = multipart("b", "\r\n", "", "", new Part(List.of("Content-Disposition: form-data; name=\"f\"",
            "Content-Transfer-Encoding: base64"), "not*base64!".getBytes(StandardCharsets.ISO_8859_1)));
        assertThatThrownBy(() -> fingerprint("multipart/form-data; boundary=b", badBase64))
            .isInstanceOf(UnreadableBodyException.class).hasMessageContaining("says base64");
    }
}
