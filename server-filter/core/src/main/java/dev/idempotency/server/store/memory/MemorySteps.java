package dev.idempotency.server.store.memory;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The steps of one record, immutable: their results by name in the order recorded, kept until {@code deadline}
 * (the latest step's keep), weighed for the byte bound.
 */
final class MemorySteps {
    /** What a step costs beyond its name's characters and its result: map node, strings, array header. */
    static final int STEP_OVERHEAD = 96;
    /** What a record's steps cost beyond their own: their object, map and map node. */
    static final int SET_OVERHEAD = 112;
    static final MemorySteps NONE = new MemorySteps(Map.of(), Long.MAX_VALUE, 0);

    final Map<String, byte[]> results;
    final long deadline;
    final long weight;

    private MemorySteps(Map<String, byte[]> results, long deadline, long weight) {
        this.results = results;
        this.deadline = deadline;
        this.weight = weight;
    }

    static long weight(String step, byte[] result) {
        return STEP_OVERHEAD + step.length() + result.length;
    }

    MemorySteps with(String step, byte[] result, long keepUntil) {
        Map<String, byte[]> next = new LinkedHashMap<>(results);
        next.put(step, result);
        long base = this == NONE ? SET_OVERHEAD : weight;
        return new MemorySteps(Collections.unmodifiableMap(next), this == NONE ? keepUntil : Math.max(deadline, keepUntil),
            base + weight(step, result));
    }

    boolean isExpired(long now) {
        return now >= deadline;
    }
}
