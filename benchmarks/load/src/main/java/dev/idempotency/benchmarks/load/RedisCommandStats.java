package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisWire;
import java.io.IOException;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a Redis server spends its time, by command: {@code INFO commandstats} read before and
 * after a run, the difference taken, so nothing is reset on a server others may share. Redis
 * counts a script's own {@code redis.call}s under their own names as well as in the script's
 * time ({@code evalsha}), so the times of a script and its commands overlap.
 */
final class RedisCommandStats {

    /** One line of {@code INFO commandstats}: {@code cmdstat_set:calls=3,usec=7,usec_per_call=...}. */
    private static final Pattern LINE = Pattern.compile("^cmdstat_([^:]+):calls=(\\d+),usec=(\\d+)", Pattern.MULTILINE);

    /** A command's totals since the server started (or its statistics were last reset). */
    record Totals(long calls, long micros) {
    }

    private RedisCommandStats() {
    }

    /** @return each command's totals, as the server at {@code redis} counts them now */
    static Map<String, Totals> read(URI redis) throws IOException {
        return parse(RedisWire.info(redis, "commandstats", 5000));
    }

    /** @return the commands of an {@code INFO commandstats} text, in its order */
    static Map<String, Totals> parse(String info) {
        Map<String, Totals> totals = new LinkedHashMap<>();
        Matcher m = LINE.matcher(info);
        while (m.find()) {
            totals.put(m.group(1), new Totals(Long.parseLong(m.group(2)), Long.parseLong(m.group(3))));
        }
        return totals;
    }

    /**
     * @return what each command did between two readings: calls and µs, commands that did
     *     nothing left out (a command first seen in {@code after} counts from zero)
     */
    static Map<String, Totals> between(Map<String, Totals> before, Map<String, Totals> after) {
        Map<String, Totals> done = new LinkedHashMap<>();
        after.forEach((command, t) -> {
            Totals b = before.getOrDefault(command, new Totals(0, 0));
            if (t.calls() > b.calls()) {
                done.put(command, new Totals(t.calls() - b.calls(), t.micros() - b.micros()));
            }
        });
        return done;
    }
}
