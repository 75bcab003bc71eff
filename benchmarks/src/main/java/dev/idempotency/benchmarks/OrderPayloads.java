package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Deterministic, realistic JSON request bodies: an order with its payment and N line items.
 *
 * <p>The bodies look like what a payments or checkout API receives: nested objects, arrays,
 * member names in no particular order (so JCS has to sort them), integers and decimals, strings
 * with non-ASCII text (Latin-1, CJK, an emoji outside the BMP), JSON escapes ({@code \"},
 * {@code \n}, {@code \t}, {@code \u00e9}) and a {@code null}. Line items are added while they
 * fit; a final ASCII {@code "memo"} member then fills the body to exactly the requested number
 * of UTF-8 bytes, so throughput in bytes per second is exact. The same size always gives the
 * same bytes (fixed seed).
 */
final class OrderPayloads {

    private static final String[] PRODUCTS = {
        "Café crème \\\"Deluxe\\\" 250 g",
        "Grüner Tee – Bio, lose",
        "Smørrebrød-Brett (Eiche)",
        "抹茶ラテ・パウダー 500g",
        "Crème brûlée torch \\u00e9dition",
        "USB-C cable 2 m, braided",
        "Gift card 🎁 50 €",
        "Kaffeebohnen \\\"Espresso Forte\\\"",
    };
    private static final String[] COLORS = {"schwarz", "weiß", "rouge", "azul", "緑"};
    private static final String[] SIZES = {"XS", "S", "M", "L", "XL"};
    private static final String[] NOTES = {
        "Bitte an der Rezeption abgeben.\\nDanke!",
        "Fragile:\\thandle with care",
        "Geschenkverpackung, Karte: \\\"Alles Gute zum 30.!\\\"",
        "",
        "Livraison après 18 h, s'il vous plaît",
    };
    private static final String MEMO_TEXT =
        "Customer requested consolidated shipping; reference previous ticket and confirm by email. ";

    private OrderPayloads() {
    }

    /**
     * @param targetBytes the exact size of the body in UTF-8 bytes; at least 512
     * @return a JSON object of exactly {@code targetBytes} bytes
     */
    static byte[] order(int targetBytes) {
        if (targetBytes < 512) {
            throw new IllegalArgumentException("targetBytes must be at least 512, was " + targetBytes);
        }
        SplittableRandom random = new SplittableRandom(0x1DE4_7E57L ^ targetBytes);
        StringBuilder head = new StringBuilder(targetBytes + 64);
        head.append("{\"orderId\":\"ord_").append(Long.toHexString(random.nextLong() >>> 1))
            .append("\",\"createdAt\":\"2024-05-17T10:15:30.123Z\"")
            .append(",\"currency\":\"EUR\"")
            .append(",\"customer\":{\"id\":\"cus_4711\",\"name\":\"Zoë Müller-Łukasiewicz\",")
            .append("\"email\":\"zoe.mueller@example.com\",\"locale\":\"de-DE\",")
            .append("\"address\":{\"line1\":\"Hauptstraße 12\",\"line2\":null,\"city\":\"München\",")
            .append("\"postalCode\":\"80331\",\"country\":\"DE\"},\"tags\":[\"vip\",\"b2b\",\"früh\"]}")
            .append(",\"payment\":{\"method\":\"card\",\"capture\":true,")
            .append("\"card\":{\"brand\":\"visa\",\"last4\":\"4242\",\"expMonth\":12,\"expYear\":2027},")
            .append("\"threeDSecure\":{\"version\":\"2.2.0\",\"required\":false}}")
            .append(",\"items\":[");

        int headBytes = utf8Length(head);
        StringBuilder items = new StringBuilder(targetBytes);
        int itemsBytes = 0;
        long subtotalCents = 0;
        int count = 0;
        while (true) {
            StringBuilder item = new StringBuilder(400);
            if (count > 0) {
                item.append(',');
            }
            long unitCents = 99 + random.nextInt(25_000);
            int quantity = 1 + random.nextInt(5);
            item.append("{\"sku\":\"SKU-").append(String.format(Locale.ROOT, "%06d", 1 + count))
                .append("\",\"name\":\"").append(PRODUCTS[random.nextInt(PRODUCTS.length)])
                .append("\",\"quantity\":").append(quantity)
                .append(",\"unitPrice\":").append(decimal(unitCents))
                .append(",\"taxRate\":").append(random.nextBoolean() ? "0.19" : "0.07")
                .append(",\"discount\":").append(random.nextInt(4) == 0 ? "0.1" : "0")
                .append(",\"attributes\":{\"color\":\"").append(COLORS[random.nextInt(COLORS.length)])
                .append("\",\"size\":\"").append(SIZES[random.nextInt(SIZES.length)])
                .append("\",\"weightGrams\":").append(50 + random.nextInt(5_000))
                .append("},\"notes\":\"").append(NOTES[random.nextInt(NOTES.length)])
                .append("\",\"gift\":").append(random.nextInt(10) == 0)
                .append(",\"warehouse\":{\"id\":").append(1 + random.nextInt(12))
                .append(",\"bin\":[").append(random.nextInt(40)).append(',').append(random.nextInt(200))
                .append("]}}");
            long lineCents = unitCents * quantity;
            String tail = tail(subtotalCents + lineCents);
            int itemBytes = utf8Length(item);
            if (headBytes + itemsBytes + itemBytes + utf8Length(tail) > targetBytes) {
                break;
            }
            items.append(item);
            itemsBytes += itemBytes;
            subtotalCents += lineCents;
            count++;
        }

        String tail = tail(subtotalCents);
        int fill = targetBytes - headBytes - itemsBytes - utf8Length(tail);
        StringBuilder memo = new StringBuilder(fill);
        while (memo.length() < fill) {
            memo.append(MEMO_TEXT, 0, Math.min(MEMO_TEXT.length(), fill - memo.length()));
        }
        String json = head.append(items).append(tail).toString().replace("\u0000MEMO\u0000", memo);
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        if (bytes.length != targetBytes) {
            throw new IllegalStateException("generated " + bytes.length + " bytes instead of " + targetBytes);
        }
        return bytes;
    }

    /** The members after the items; the memo placeholder does not count towards the size. */
    private static String tail(long subtotalCents) {
        long taxCents = subtotalCents * 19 / 100;
        long shippingCents = 490;
        return "],\"totals\":{\"subtotal\":" + decimal(subtotalCents)
            + ",\"tax\":" + decimal(taxCents)
            + ",\"shipping\":" + decimal(shippingCents)
            + ",\"total\":" + decimal(subtotalCents + taxCents + shippingCents)
            + "},\"memo\":\"\u0000MEMO\u0000\"}";
    }

    private static String decimal(long cents) {
        return (cents / 100) + "." + String.format(Locale.ROOT, "%02d", cents % 100);
    }

    /** UTF-8 length, not counting the memo placeholder's six characters. */
    private static int utf8Length(CharSequence s) {
        String str = s.toString();
        int placeholder = str.contains("\u0000MEMO\u0000") ? 6 : 0;
        return str.getBytes(StandardCharsets.UTF_8).length - placeholder;
    }
}
