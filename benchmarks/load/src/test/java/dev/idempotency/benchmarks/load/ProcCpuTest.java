package dev.idempotency.benchmarks.load;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

class ProcCpuTest {

    @Test
    void groupsTheServicesThreadsByWhatTheyDo() {
        // names as /proc has them: at most 15 characters
        assertThat(ProcCpu.Group.of("default-eventLo")).isEqualTo(ProcCpu.Group.EVENT_LOOPS);
        assertThat(ProcCpu.Group.of("io-executor-thr")).isEqualTo(ProcCpu.Group.HANDLER_EXECUTOR);
        assertThat(ProcCpu.Group.of("idempotency-pos")).isEqualTo(ProcCpu.Group.STORE_AND_FILTER);
        assertThat(ProcCpu.Group.of("lettuce-nioEven")).isEqualTo(ProcCpu.Group.STORE_AND_FILTER);
        assertThat(ProcCpu.Group.of("GC Thread#0")).isEqualTo(ProcCpu.Group.GC_AND_VM);
        assertThat(ProcCpu.Group.of("G1 Conc#0")).isEqualTo(ProcCpu.Group.GC_AND_VM);
        assertThat(ProcCpu.Group.of("ZWorker#0")).isEqualTo(ProcCpu.Group.GC_AND_VM);
        assertThat(ProcCpu.Group.of("ZDriver")).isEqualTo(ProcCpu.Group.GC_AND_VM);
        assertThat(ProcCpu.Group.of("Zeta-worker")).isEqualTo(ProcCpu.Group.OTHER);
        assertThat(ProcCpu.Group.of("C2 CompilerThre")).isEqualTo(ProcCpu.Group.JIT);
        assertThat(ProcCpu.Group.of("Signal Dispatch")).isEqualTo(ProcCpu.Group.OTHER);
    }

    @Test
    void countsALiveThreadsCpuTimeInItsGroupAndInTheProcess() throws Exception {
        long pid = ProcessHandle.current().pid();
        assertThat(ProcCpu.byThreadGroup(pid)).as("this test needs Linux's /proc").isNotEmpty();
        CpuBurner burner = new CpuBurner();
        Thread thread = new Thread(burner, "io-executor-thread-test");
        thread.start();
        burner.burnedEnough.await();
        Map<ProcCpu.Group, Long> sampled = ProcCpu.byThreadGroup(pid); // while it runs: /proc lists live threads only
        long process = ProcCpu.process(pid);
        burner.stop = true;
        thread.join();
        // the thread used at least 300 ms of CPU by its own clock; /proc counts in 10 ms ticks
        assertThat(sampled.get(ProcCpu.Group.HANDLER_EXECUTOR)).isGreaterThanOrEqualTo(250_000_000L);
        assertThat(sampled.get(ProcCpu.Group.OTHER)).as("the test's own threads").isNotNull();
        // each thread's time is rounded to a tick on its own, the process's once
        long tolerance;
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            tolerance = tasks.count() * 10_000_000L;
        }
        assertThat(process).as("the process counts every thread, ended ones too")
            .isGreaterThanOrEqualTo(sampled.values().stream().mapToLong(Long::longValue).sum() - tolerance);
    }

    /** Hashes until the calling thread has used {@code nanos} of CPU. */
    private static void burn(long nanos) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long start = threads.getCurrentThreadCpuTime();
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] block = new byte[4096];
            while (threads.getCurrentThreadCpuTime() - start < nanos) {
                for (int i = 0; i < 100; i++) {
                    digest.update(block);
                }
                block[0] = digest.digest()[0];
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Burns 300 ms of CPU, then spins until told to stop, so its thread is alive when sampled. */
    private static final class CpuBurner implements Runnable {
        final CountDownLatch burnedEnough = new CountDownLatch(1);
        volatile boolean stop;

        @Override
        public void run() {
            burn(300_000_000L);
            burnedEnough.countDown();
            while (!stop) {
                Thread.onSpinWait();
            }
        }
    }
}
