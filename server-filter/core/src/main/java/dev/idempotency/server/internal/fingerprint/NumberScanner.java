package dev.idempotency.server.internal.fingerprint;

import dev.idempotency.server.internal.fingerprint.JsonCanonicalizer.NotCanonicalizableException;
import org.erdtman.jcs.NumberToJSON;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The scanner's cursor over the input and its numbers: a number already in ECMAScript's form is
 * copied, any other is spelled from its digits and exponent, or through its double value where
 * the digits alone cannot say (see {@link JsonCanonicalizer}).
 */
abstract class NumberScanner {

    private static final long MAX_EXACT = 1L << 53;
    /** Most significant digits taken verbatim: every decimal of this many digits round-trips through a double. */
    static final int EXACT_DIGITS = 15;

    final byte[] json;
    final int length;
    final CanonicalBuffer out;
    int pos;

    NumberScanner(byte[] json, int length, CanonicalBuffer out) {
        this.json = json;
        this.length = length;
        this.out = out;
    }

    void skipWhitespace() {
        int p = pos;
        while (p < length) {
            byte b = json[p];
            if (b > ' ' || (b != ' ' && b != '\n' && b != '\r' && b != '\t')) {
                break;
            }
            p++;
        }
        pos = p;
    }

    byte peek() throws NotCanonicalizableException {
        if (pos >= length) {
            throw invalid("unexpected end of the JSON text");
        }
        return json[pos];
    }

    /**
     * A number at {@code pos} (RFC 8259 grammar), spelled canonically from its text where that
     * is exact (see the class comment), else through its double value.
     */
    void number() throws NotCanonicalizableException {
        if (!copyIfCanonical()) {
            spellNumber();
        }
    }

    /**
     * The common case: a number already written as ECMAScript spells it (an integer of at most
     * 15 digits, or a decimal of at most 15 significant digits without trailing zeros or an
     * exponent, down to 0.000001) is copied as it is.
     *
     * @return {@code false}, with {@code pos} unchanged, when the number needs spelling
     */
    private boolean copyIfCanonical() {
        int start = pos;
        int i = start;
        if (json[i] == '-') {
            i++;
        }
        int intStart = i;
        while (i < length && json[i] >= '0' && json[i] <= '9') {
            i++;
        }
        int intDigits = i - intStart;
        if (intDigits == 0 || intDigits > EXACT_DIGITS || (json[intStart] == '0' && intDigits > 1)) {
            return false;
        }
        int significant;
        if (i < length && json[i] == '.') {
            int fracStart = ++i;
            while (i < length && json[i] >= '0' && json[i] <= '9') {
                i++;
            }
            if (i == fracStart || json[i - 1] == '0') {
                return false; // no digits, or a trailing zero
            }
            if (json[intStart] == '0') {
                int zeros = 0;
                while (json[fracStart + zeros] == '0') {
                    zeros++;
                }
                if (zeros > 5) {
                    return false; // 1e-7 and smaller take the exponent form
                }
                significant = i - fracStart - zeros;
            } else {
                significant = intDigits + (i - fracStart);
            }
        } else {
            if (json[intStart] == '0' && intStart > start) {
                return false; // -0 is 0
            }
            significant = intDigits;
        }
        if (significant > EXACT_DIGITS || (i < length && (json[i] == 'e' || json[i] == 'E'))) {
            return false;
        }
        out.write(json, start, i - start);
        pos = i;
        return true;
    }

    /** Any other number, spelled from its digits and exponent. */
    private void spellNumber() throws NotCanonicalizableException {
        int start = pos;
        boolean negative = json[pos] == '-';
        if (negative) {
            pos++;
        }
        char[] d = out.digits;
        int k = 0;
        int intDigits = 0;
        if (pos >= length) {
            throw invalid("truncated number");
        }
        if (json[pos] == '0') {
            d = digits(d, k + 1);
            d[k++] = '0';
            intDigits = 1;
            pos++;
        } else if (json[pos] >= '1' && json[pos] <= '9') {
            while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                d = digits(d, k + 1);
                d[k++] = (char) json[pos++];
                intDigits++;
            }
        } else {
            throw invalid("bad number");
        }
        if (pos < length && json[pos] == '.') {
            pos++;
            int before = k;
            while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                d = digits(d, k + 1);
                d[k++] = (char) json[pos++];
            }
            if (k == before) {
                throw invalid("a fraction needs digits");
            }
        }
        long exponent = 0;
        if (pos < length && (json[pos] == 'e' || json[pos] == 'E')) {
            pos++;
            boolean negativeExponent = false;
            if (pos < length && (json[pos] == '+' || json[pos] == '-')) {
                negativeExponent = json[pos] == '-';
                pos++;
            }
            int expStart = pos;
            while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                if (exponent < 100_000) {
                    exponent = exponent * 10 + (json[pos] - '0');
                }
                pos++;
            }
            if (pos == expStart) {
                throw invalid("an exponent needs digits");
            }
            if (negativeExponent) {
                exponent = -exponent;
            }
        }
        int lead = 0;
        while (lead < k && d[lead] == '0') {
            lead++;
        }
        if (lead == k) {
            out.write('0'); // any zero, -0 included
            return;
        }
        int last = k;
        while (d[last - 1] == '0') {
            last--;
        }
        // the value is 0.d[lead, last) x 10^n
        long n = intDigits - lead + exponent;
        int digits = last - lead;
        if (digits > EXACT_DIGITS || n > 308 || n < -306) {
            viaDouble(Double.parseDouble(new String(json, start, pos - start, StandardCharsets.US_ASCII)));
            return;
        }
        if (negative) {
            out.write('-');
        }
        spell(d, lead, digits, (int) n);
    }

    private char[] digits(char[] d, int need) {
        if (need > d.length) {
            d = Arrays.copyOf(d, Math.max(need, d.length * 2));
            out.digits = d;
        }
        return d;
    }

    /** ECMAScript Number::toString of 0.d[from, from + k) x 10^n. */
    private void spell(char[] d, int from, int k, int n) {
        if (k <= n && n <= 21) {
            out.ascii(d, from, k);
            for (int z = k; z < n; z++) {
                out.write('0');
            }
        } else if (0 < n && n <= 21) {
            out.ascii(d, from, n);
            out.write('.');
            out.ascii(d, from + n, k - n);
        } else if (-6 < n && n <= 0) {
            out.write('0');
            out.write('.');
            for (int z = n; z < 0; z++) {
                out.write('0');
            }
            out.ascii(d, from, k);
        } else {
            out.write(d[from]);
            if (k > 1) {
                out.write('.');
                out.ascii(d, from + 1, k - 1);
            }
            out.write('e');
            int e = n - 1;
            out.write(e < 0 ? '-' : '+');
            out.ascii(Integer.toString(Math.abs(e)));
        }
    }

    private void viaDouble(double v) throws NotCanonicalizableException {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            throw invalid("number outside IEEE-754 double range");
        }
        if (v == Math.rint(v) && Math.abs(v) <= MAX_EXACT) {
            // an integral double up to 2^53 prints as its integer digits in ECMAScript; -0 as 0
            out.ascii(Long.toString((long) v));
        } else {
            try {
                out.ascii(NumberToJSON.serializeNumber(v));
            } catch (java.io.IOException e) {
                throw new NotCanonicalizableException("number not serializable", e);
            }
        }
    }

    static NotCanonicalizableException invalid(String what) {
        return new NotCanonicalizableException(what, null);
    }
}
