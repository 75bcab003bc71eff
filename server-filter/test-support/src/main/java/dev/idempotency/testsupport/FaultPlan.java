package dev.idempotency.testsupport;

import dev.idempotency.testsupport.FaultProxy.Decision;
import dev.idempotency.testsupport.FaultProxy.DropMode;
import dev.idempotency.testsupport.FaultProxy.Fault;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.Random;

/**
 * What the proxy does to each request and connection: the configured chances drawn from two
 * {@link Random}s seeded with one seed (request faults in arrival order, connection refusals
 * apart), faults scripted ahead of them, and the log of the decisions. Thread-safe.
 */
final class FaultPlan {

    private static final int MAX_LOG = 10_000;

    private final long seed;
    private final double resetProbability;
    private final Duration requestDelay;
    private final double requestDelayProbability;
    private final Duration responseDelay;
    private final double responseDelayProbability;
    private final double dropProbability;
    private final DropMode dropMode;
    private final double refuseProbability;
    private final Random requestRandom;
    private final Random connectionRandom;
    private final Deque<Fault> scripted = new ArrayDeque<>();
    private final Deque<Decision> log = new ArrayDeque<>();
    private long nextRequestIndex;

    FaultPlan(long seed, double resetProbability, Duration requestDelay, double requestDelayProbability,
              Duration responseDelay, double responseDelayProbability, double dropProbability, DropMode dropMode,
              double refuseProbability) {
        this.seed = seed;
        this.resetProbability = resetProbability;
        this.requestDelay = requestDelay;
        this.requestDelayProbability = requestDelayProbability;
        this.responseDelay = responseDelay;
        this.responseDelayProbability = responseDelayProbability;
        this.dropProbability = dropProbability;
        this.dropMode = dropMode;
        this.refuseProbability = refuseProbability;
        this.requestRandom = new Random(seed);
        this.connectionRandom = new Random(seed ^ 0x5DEECE66DL);
    }

    long seed() {
        return seed;
    }

    Duration requestDelay() {
        return requestDelay;
    }

    Duration responseDelay() {
        return responseDelay;
    }

    DropMode dropMode() {
        return dropMode;
    }

    /** Queues faults for the next requests, ahead of the random decisions. */
    void script(Fault... faults) {
        synchronized (requestRandom) {
            for (Fault f : faults) {
                scripted.add(Objects.requireNonNull(f, "fault"));
            }
        }
    }

    /** @return the decisions so far, oldest first (the last {@value #MAX_LOG}) */
    List<Decision> decisions() {
        synchronized (requestRandom) {
            return List.copyOf(log);
        }
    }

    /** @return whether to refuse the connection just accepted */
    boolean refuseConnection() {
        synchronized (connectionRandom) {
            return connectionRandom.nextDouble() < refuseProbability;
        }
    }

    /** @return the faults of the next request, scripted or drawn */
    Decision decide() {
        synchronized (requestRandom) {
            double r = requestRandom.nextDouble();
            double dq = requestRandom.nextDouble();
            double ds = requestRandom.nextDouble();
            double dr = requestRandom.nextDouble();
            Fault f = scripted.poll();
            Decision d;
            long index = nextRequestIndex++;
            if (f != null) {
                d = new Decision(index, f == Fault.RESET, f == Fault.DELAY_REQUEST, f == Fault.DELAY_RESPONSE,
                    f == Fault.DROP_RESPONSE);
            } else {
                boolean reset = r < resetProbability;
                d = new Decision(index, reset, !reset && dq < requestDelayProbability,
                    !reset && ds < responseDelayProbability, !reset && dr < dropProbability);
            }
            if (log.size() == MAX_LOG) {
                log.removeFirst();
            }
            log.addLast(d);
            return d;
        }
    }
}
