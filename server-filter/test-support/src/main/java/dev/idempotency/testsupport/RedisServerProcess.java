package dev.idempotency.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A {@code redis-server} process the tests start themselves, on 127.0.0.1 and a free port, with
 * its own temporary directory (deleted by {@link #close()}). The binary is {@code redis-server}
 * from the PATH when there is one, else the one shipped inside the embedded-redis jar
 * (com.github.codemonstur:embedded-redis), copied to a temporary file and made executable. So
 * the tests need no Redis installed.
 */
public final class RedisServerProcess implements AutoCloseable {

    private static volatile Path jarBinary;

    private final Path binary;
    private final int port;
    private final Path dir;
    private final List<String> options;
    /** A configuration file given first on the command line (a sentinel's, which it rewrites), or {@code null}. */
    private Path config;
    private Process process;
    /** Options of this start only, after {@link #options} ({@link #restart(String...)}). */
    private List<String> extra = List.of();

    private RedisServerProcess(Path binary, int port, Path dir, List<String> options) {
        this.binary = binary;
        this.port = port;
        this.dir = dir;
        this.options = options;
    }

    /**
     * Starts a Redis Sentinel on a free port that monitors the primary at 127.0.0.1:{@code primaryPort}
     * as {@code master}, with a quorum of {@code quorum} and a primary counted down after
     * {@code downAfterMillis} without an answer. Its configuration file is in its directory
     * (a sentinel rewrites it as it learns the topology).
     */
    public static RedisServerProcess sentinel(String master, int primaryPort, int quorum, long downAfterMillis) {
        int port = freePort(false);
        try {
            Path dir = Files.createTempDirectory("idempotency-sentinel-" + port + "-");
            Path conf = dir.resolve("sentinel.conf");
            Files.writeString(conf, String.join("\n",
                "sentinel monitor " + master + " 127.0.0.1 " + primaryPort + " " + quorum,
                "sentinel down-after-milliseconds " + master + " " + downAfterMillis,
                "sentinel failover-timeout " + master + " " + Math.max(2000, 4 * downAfterMillis),
                "sentinel parallel-syncs " + master + " 1", ""));
            RedisServerProcess p = new RedisServerProcess(binary(), port, dir, List.of("--sentinel"));
            p.config = conf;
            p.startProcess();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts a server on a free port with the given extra {@code redis-server} options. */
    public static RedisServerProcess start(String... options) {
        return start(binary(), freePort(false), options);
    }

    public static RedisServerProcess start(Path binary, int port, String... options) {
        try {
            Path dir = Files.createTempDirectory("idempotency-redis-" + port + "-");
            RedisServerProcess p = new RedisServerProcess(binary, port, dir, List.of(options));
            p.startProcess();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return port;
    }

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    public Path dir() {
        return dir;
    }

    public boolean isRunning() {
        return process != null && process.isAlive();
    }

    /**
     * Makes the running server require {@code password} from now on ({@code CONFIG SET
     * requirepass}), for tests of clients that authenticate; reach it then as
     * {@code redis://:password@127.0.0.1:port}. Set after the start, which waits for an open
     * {@code PING}; a {@link #restart()} starts it without the password again.
     */
    public void requirePassword(String password) {
        try (Socket s = RedisWire.open(URI.create(uri()), 2000)) {
            s.setSoTimeout(2000);
            s.getOutputStream().write(RedisWire.command("CONFIG", "SET", "requirepass", password));
            s.getOutputStream().flush();
            String reply = RedisWire.line(s.getInputStream());
            if (!reply.equals("+OK")) {
                throw new IllegalStateException("redis-server on port " + port + " refused requirepass: " + reply);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * @return how many clients the server has connected now ({@code INFO clients}'
     *     {@code connected_clients}), not counting the connection that asks; for tests that check
     *     what a client opened and closed. Asked without a password, as {@link #requirePassword} is.
     */
    public int connectedClients() {
        String info;
        try {
            info = RedisWire.info(URI.create(uri()), "clients", 2000);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return info.lines().filter(l -> l.startsWith("connected_clients:"))
            .mapToInt(l -> Integer.parseInt(l.substring("connected_clients:".length()).trim()) - 1)
            .findFirst()
            .orElseThrow(() -> new IllegalStateException("redis-server on port " + port
                + " gave no connected_clients in INFO clients"));
    }

    /** Kills the process (SIGKILL: no shutdown save); the data directory stays. */
    public void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    /** Stops the process (SIGSTOP): its connections stay open, and it answers nothing until {@link #resume()}. */
    public void pause() {
        signal("STOP");
    }

    /** Lets a {@link #pause() paused} process run again (SIGCONT). */
    public void resume() {
        signal("CONT");
    }

    private void signal(String name) {
        if (process == null) {
            throw new IllegalStateException("redis-server on port " + port + " is not running");
        }
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Starts the server again on the same port, with the same directory and options. */
    public void restart() {
        restart(new String[0]);
    }

    /** Starts the server again like {@link #restart()}, with {@code moreOptions} after its own (e.g. {@code --replicaof}). */
    public void restart(String... moreOptions) {
        kill();
        extra = List.of(moreOptions);
        startProcess();
    }

    private void startProcess() {
        List<String> cmd = new ArrayList<>(List.of(binary.toString()));
        if (config != null) {
            cmd.add(config.toString());
        }
        cmd.addAll(List.of("--port", Integer.toString(port),
            "--bind", "127.0.0.1", "--dir", dir.toString(), "--save", "", "--protected-mode", "no",
            "--logfile", dir.resolve("redis.log").toString()));
        cmd.addAll(options);
        cmd.addAll(extra);
        try {
            process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("stdout.log").toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + cmd, e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited with " + process.exitValue() + ": " + log());
            }
            if (ping("127.0.0.1", port, 200)) {
                return;
            }
            sleep(50);
        }
        process.destroyForcibly();
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING: " + log());
    }

    /** @return what the process wrote to its log and standard output so far */
    public String log() {
        try {
            StringBuilder sb = new StringBuilder();
            for (String f : List.of("stdout.log", "redis.log")) {
                Path p = dir.resolve(f);
                if (Files.exists(p)) {
                    sb.append(Files.readString(p, StandardCharsets.ISO_8859_1));
                }
            }
            return sb.toString();
        } catch (IOException e) {
            return e.toString();
        }
    }

    @Override
    public void close() {
        kill();
        deleteTree(dir);
    }

    /** @return whether a Redis server answers {@code PING} at host:port within the timeout (no password) */
    public static boolean ping(String host, int port, int timeoutMillis) {
        // -NOAUTH or -LOADING: something Redis-like answers; only +PONG counts
        return RedisWire.answersPing(URI.create("redis://" + host + ":" + port), timeoutMillis);
    }

    /** A free TCP port on 127.0.0.1; with {@code clusterBus} also port + 10000 is free. */
    public static int freePort(boolean clusterBus) {
        for (int attempt = 0; attempt < 100; attempt++) {
            try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                int port = s.getLocalPort();
                if (!clusterBus) {
                    return port;
                }
                if (port + 10000 <= 65535) {
                    try (ServerSocket bus = new ServerSocket(port + 10000, 1, java.net.InetAddress.getLoopbackAddress())) {
                        return port;
                    } catch (IOException busy) {
                        // try another
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        throw new IllegalStateException("no free port pair found");
    }

    /** {@code redis-server} from the PATH, else the one inside the embedded-redis jar. */
    public static Path binary() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(java.io.File.pathSeparator)) {
                Path candidate = Path.of(d, "redis-server");
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        return jarBinary();
    }

    /** The redis-server binary shipped inside the embedded-redis jar, extracted once per JVM. */
    public static synchronized Path jarBinary() {
        if (jarBinary != null) {
            return jarBinary;
        }
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        String resource;
        if (os.contains("linux")) {
            resource = arch.contains("aarch64") || arch.contains("arm64") ? "redis-server-6.2.7-linux-arm64"
                : arch.contains("64") ? "redis-server-6.2.6-v5-linux-amd64" : "redis-server-6.2.7-linux-386";
        } else if (os.contains("mac")) {
            resource = arch.contains("aarch64") || arch.contains("arm64") ? "redis-server-6.2.6-v5-darwin-arm64"
                : "redis-server-6.2.6-v5-darwin-amd64";
        } else {
            throw new IllegalStateException("no redis-server on the PATH and no embedded binary for " + os + "/" + arch);
        }
        try (InputStream in = redis.embedded.RedisServer.class.getResourceAsStream("/" + resource)) {
            if (in == null) {
                throw new IllegalStateException("embedded-redis jar has no " + resource);
            }
            Path file = Files.createTempFile("idempotency-" + resource + "-", "");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
            file.toFile().deleteOnExit();
            jarBinary = file;
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort
                }
            });
        } catch (IOException e) {
            // best effort
        }
    }

    public static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
