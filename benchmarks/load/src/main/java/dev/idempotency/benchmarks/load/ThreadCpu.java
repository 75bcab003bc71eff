package dev.idempotency.benchmarks.load;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The CPU time a process's threads have used, summed by what the threads do, read from Linux's
 * {@code /proc/<pid>/task}: where the service's CPU per request goes (its event loops, the
 * executor the handler runs on, the store client's and the filter's own threads, the collector
 * and the VM's safepoints, the compiler), so a change can be judged by the part it moves. Empty
 * where {@code /proc} cannot tell.
 */
final class ThreadCpu {

    /** The groups, in the order they are printed. */
    static final List<String> GROUPS = List.of("event loops", "handler executor", "store and idempotency threads", "GC and VM",
        "JIT", "other");

    /** {@code /proc}'s clock ticks per second ({@code getconf CLK_TCK}), 100 on Linux. */
    private static final long NANOS_PER_TICK = 1_000_000_000L / 100;

    private ThreadCpu() {
    }

    /** @return each group's CPU time so far (user and system), in nanoseconds; empty when unreadable */
    static Map<String, Long> sample(long pid) {
        Map<String, Long> byGroup = new LinkedHashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks) {
                try {
                    String name = Files.readString(task.resolve("comm")).trim();
                    String stat = Files.readString(task.resolve("stat"));
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
                    byGroup.merge(group(name), ticks * NANOS_PER_TICK, Long::sum);
                } catch (IOException | RuntimeException e) {
                    // the thread ended between the listing and the read: its time is no longer counted
                    // anywhere, which a run of seconds does not notice
                }
            }
        } catch (IOException | RuntimeException e) {
            return Map.of();
        }
        return byGroup;
    }

    /** @return the group of a thread, by its name as {@code /proc} has it (at most 15 characters) */
    static String group(String name) {
        if (name.startsWith("default-eventLo") || name.startsWith("nioEventLoopGr")) {
            return "event loops";
        }
        if (name.startsWith("io-executor") || name.startsWith("blocking-execut") || name.startsWith("virtual-execut")) {
            return "handler executor";
        }
        if (name.startsWith("idempotency-") || name.startsWith("lettuce-") || name.startsWith("HikariPool")
            || name.startsWith("PostgreSQL-JDB")) {
            return "store and idempotency threads";
        }
        if (name.startsWith("GC Thread") || name.startsWith("G1 ") || name.equals("VM Thread")) {
            return "GC and VM";
        }
        if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
            return "JIT";
        }
        return "other";
    }
}
