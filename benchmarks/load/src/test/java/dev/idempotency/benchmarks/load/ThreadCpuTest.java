package dev.idempotency.benchmarks.load;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;

class ThreadCpuTest {

    @Test
    void groupsTheServicesThreadsByWhatTheyDo() {
        // names as /proc has them: at most 15 characters
        assertThat(ThreadCpu.group("default-eventLo")).isEqualTo("event loops");
        assertThat(ThreadCpu.group("io-executor-thr")).isEqualTo("handler executor");
        assertThat(ThreadCpu.group("idempotency-pos")).isEqualTo("store and idempotency threads");
        assertThat(ThreadCpu.group("lettuce-nioEven")).isEqualTo("store and idempotency threads");
        assertThat(ThreadCpu.group("GC Thread#0")).isEqualTo("GC and VM");
        assertThat(ThreadCpu.group("G1 Conc#0")).isEqualTo("GC and VM");
        assertThat(ThreadCpu.group("C2 CompilerThre")).isEqualTo("JIT");
        assertThat(ThreadCpu.group("Signal Dispatch")).isEqualTo("other");
        assertThat(ThreadCpu.GROUPS).contains("event loops", "handler executor", "store and idempotency threads",
            "GC and VM", "JIT", "other");
    }

    @Test
    void countsALiveThreadsCpuTimeInItsGroup() throws Exception {
        long pid = ProcessHandle.current().pid();
        assertThat(ThreadCpu.sample(pid)).as("this test needs Linux's /proc").isNotEmpty();
        CpuBurner burner = new CpuBurner();
        Thread thread = new Thread(burner, "io-executor-thread-test");
        thread.start();
        burner.burnedEnough.await();
        Map<String, Long> sampled = ThreadCpu.sample(pid); // while it runs: /proc lists live threads only
        burner.stop = true;
        thread.join();
        // the thread used at least 300 ms of CPU by its own clock; /proc counts in 10 ms ticks
        assertThat(sampled.get("handler executor")).isGreaterThanOrEqualTo(250_000_000L);
        assertThat(sampled.get("other")).as("the test's own threads").isNotNull();
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
