package dev.idempotency.testsupport;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;

/** A {@link FaultProxy}'s configuration; every probability is in [0, 1], 0 (never) by default. */
public final class FaultProxyBuilder {
    InetSocketAddress upstream;
    int port;
    Long seed;
    double dropProbability;
    FaultProxy.DropMode dropMode = FaultProxy.DropMode.CLOSE;
    double resetProbability;
    Duration requestDelay = Duration.ZERO;
    double requestDelayProbability;
    Duration responseDelay = Duration.ZERO;
    double responseDelayProbability;
    double refuseProbability;
    boolean down;

    FaultProxyBuilder() {
    }

    /** Forward to {@code 127.0.0.1:port}. Required (this or the other overload). */
    public FaultProxyBuilder upstream(int port) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("upstream port must be 1..65535: " + port);
        }
        this.upstream = new InetSocketAddress(FaultProxy.BIND, port);
        return this;
    }

    /**
     * Forward to a resolved <b>loopback</b> address ({@code 127.0.0.0/8} or {@code ::1}).
     *
     * @throws IllegalArgumentException for an unresolved or non-loopback address (this proxy
     *     never sends traffic anywhere else)
     */
    public FaultProxyBuilder upstream(InetSocketAddress address) {
        Objects.requireNonNull(address, "address");
        if (address.isUnresolved() || address.getAddress() == null) {
            throw new IllegalArgumentException("upstream must be a resolved loopback address: " + address);
        }
        if (!address.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("upstream must be a loopback address, not " + address);
        }
        if (address.getPort() < 1) {
            throw new IllegalArgumentException("upstream port must be 1..65535: " + address);
        }
        this.upstream = address;
        return this;
    }

    /** Listen on this port of 127.0.0.1; 0 (the default) picks a free one. */
    public FaultProxyBuilder port(int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535: " + port);
        }
        this.port = port;
        return this;
    }

    /** Seed of the fault decisions; without one a seed is picked (see {@link FaultProxy#seed()}). */
    public FaultProxyBuilder seed(long seed) {
        this.seed = seed;
        return this;
    }

    /** Chance that a request's response is read from the upstream and then withheld. */
    public FaultProxyBuilder dropResponseProbability(double p) {
        this.dropProbability = probability(p);
        return this;
    }

    /** How a dropped response ends the client connection; {@link FaultProxy.DropMode#CLOSE} by default. */
    public FaultProxyBuilder dropMode(FaultProxy.DropMode mode) {
        this.dropMode = Objects.requireNonNull(mode, "mode");
        return this;
    }

    /** Chance that a request is answered with a RST instead of being forwarded. */
    public FaultProxyBuilder resetProbability(double p) {
        this.resetProbability = probability(p);
        return this;
    }

    /** Chance that a request is held for {@code delay} before it is forwarded. */
    public FaultProxyBuilder delay(Duration delay, double p) {
        this.requestDelay = duration(delay);
        this.requestDelayProbability = probability(p);
        return this;
    }

    /** Chance that a response, already read from the upstream, is held for {@code delay}. */
    public FaultProxyBuilder responseDelay(Duration delay, double p) {
        this.responseDelay = duration(delay);
        this.responseDelayProbability = probability(p);
        return this;
    }

    /** Chance that a new connection is accepted and immediately reset. */
    public FaultProxyBuilder refuseProbability(double p) {
        this.refuseProbability = probability(p);
        return this;
    }

    /** Start with the "down" switch on (see {@link FaultProxy#setDown(boolean)}). */
    public FaultProxyBuilder down(boolean down) {
        this.down = down;
        return this;
    }

    /** @throws IllegalStateException without an upstream */
    public FaultProxy build() {
        if (upstream == null) {
            throw new IllegalStateException("upstream is required");
        }
        return new FaultProxy(this);
    }

    static double probability(double p) {
        if (!(p >= 0.0 && p <= 1.0)) {
            throw new IllegalArgumentException("probability must be in [0, 1]: " + p);
        }
        return p;
    }

    static Duration duration(Duration d) {
        Objects.requireNonNull(d, "delay");
        if (d.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative: " + d);
        }
        return d;
    }
}
