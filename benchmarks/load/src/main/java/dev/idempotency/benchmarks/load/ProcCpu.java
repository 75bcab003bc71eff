package dev.idempotency.benchmarks.load;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;

/**
 * The CPU time (user and system) a process has used, read from Linux's {@code /proc}: the whole
 * process's, and its live threads' summed by what they do ({@link Group}), so a change can be
 * judged by the part of the service's CPU it moves. Where {@code /proc} cannot tell: -1, or an
 * empty map.
 */
final class ProcCpu {

    /** What a thread does, by its name. */
    enum Group {
        EVENT_LOOPS("event loops"),
        HANDLER_EXECUTOR("handler executor"),
        STORE_AND_FILTER("store client and filter threads"),
        GC_AND_VM("GC and VM"),
        JIT("JIT"),
        OTHER("other");

        final String label;

        Group(String label) {
            this.label = label;
        }

        /** @return the group of a thread, by its name as {@code /proc} has it (at most 15 characters) */
        static Group of(String name) {
            if (name.startsWith("default-eventLo") || name.startsWith("nioEventLoopGr")) {
                return EVENT_LOOPS;
            }
            if (name.startsWith("io-executor") || name.startsWith("blocking-execut") || name.startsWith("virtual-execut")) {
                return HANDLER_EXECUTOR;
            }
            if (name.startsWith("idempotency-") || name.startsWith("lettuce-") || name.startsWith("HikariPool")
                || name.startsWith("PostgreSQL-JDB")) {
                return STORE_AND_FILTER;
            }
            if (name.startsWith("GC Thread") || name.startsWith("G1 ") || name.equals("VM Thread") || isZgc(name)) {
                return GC_AND_VM;
            }
            if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
                return JIT;
            }
            return OTHER;
        }
    }

    /** @return whether a thread is one of ZGC's ({@code ZWorker#0}, {@code ZDriver}, {@code ZDirector}, ...) */
    private static boolean isZgc(String name) {
        return name.length() > 1 && name.charAt(0) == 'Z' && Character.isUpperCase(name.charAt(1));
    }

    /** {@code /proc}'s clock ticks per second ({@code getconf CLK_TCK}), 100 on Linux. */
    private static final long NANOS_PER_TICK = 1_000_000_000L / 100;

    private ProcCpu() {
    }

    /**
     * @return the process of this machine whose name starts with {@code name} and one of whose
     *     command-line words ends with {@code suffix} (a Redis server shows its address,
     *     {@code 127.0.0.1:6379}, so {@code :6379} finds it and not one on port 16379), or -1 when
     *     there is none, or more than one
     */
    static long find(String name, String suffix) {
        long found = -1;
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path process : processes) {
                String commandLine;
                try {
                    if (!Files.readString(process.resolve("comm")).startsWith(name)) {
                        continue;
                    }
                    // arguments end with a NUL each: as spaces, every word is followed by one
                    commandLine = Files.readString(process.resolve("cmdline")).replace('\0', ' ');
                } catch (IOException e) {
                    continue; // ended meanwhile, or not ours to read
                }
                if (commandLine.contains(suffix + ' ')) {
                    if (found != -1) {
                        return -1;
                    }
                    found = Long.parseLong(process.getFileName().toString());
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return found;
    }

    /** @return the CPU time the process has used so far, in nanoseconds, or -1 */
    static long process(long pid) {
        return nanos(Path.of("/proc/" + pid + "/stat"));
    }

    /**
     * Each group's CPU time so far, in nanoseconds, over the threads alive now: a thread that has
     * ended takes its whole time out of its group, so a group can shrink between two samples.
     *
     * @return the groups that have threads; empty where {@code /proc} cannot tell
     */
    static Map<Group, Long> byThreadGroup(long pid) {
        Map<Group, Long> byGroup = new EnumMap<>(Group.class);
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks) {
                long nanos = nanos(task.resolve("stat"));
                if (nanos >= 0) { // else the thread ended between the listing and the read
                    byGroup.merge(Group.of(name(task)), nanos, Long::sum);
                }
            }
        } catch (IOException | RuntimeException e) {
            return Map.of();
        }
        return byGroup;
    }

    private static String name(Path task) {
        try {
            return Files.readString(task.resolve("comm")).trim();
        } catch (IOException e) {
            return "";
        }
    }

    /** @return utime + stime of a {@code stat} file, in nanoseconds, or -1 when it cannot be read */
    private static long nanos(Path stat) {
        try {
            String text = Files.readString(stat);
            String[] fields = text.substring(text.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * NANOS_PER_TICK;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
