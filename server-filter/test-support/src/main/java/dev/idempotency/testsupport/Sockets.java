package dev.idempotency.testsupport;

import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.time.Duration;

/** Small socket chores of the proxy: a reset instead of a close, a quiet close, a loopback address. */
final class Sockets {

    private Sockets() {
    }

    static void sleep(Duration d) throws InterruptedException {
        if (d != null && !d.isZero()) {
            Thread.sleep(d.toMillis(), (int) (d.toNanosPart() % 1_000_000));
        }
    }

    /** {@code SO_LINGER 0} then close: the kernel answers with RST, not FIN. */
    static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (SocketException ignored) {
            // already closed
        }
        closeQuietly(s);
    }

    static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // closing anyway
        }
    }

    static InetAddress loopbackV4() {
        try {
            return InetAddress.getByAddress("127.0.0.1", new byte[] {127, 0, 0, 1});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}
