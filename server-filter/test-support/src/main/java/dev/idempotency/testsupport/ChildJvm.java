package dev.idempotency.testsupport;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Micronaut application in a JVM of its own, for tests and demos that kill a service
 * ({@link Runtime#halt} inside it, or {@link #kill()}) and start it again with the same command.
 * Its output goes to a log file; its classpath is this JVM's (the test's, or under
 * {@code exec:java} the project's) without the entries that name another application, so that
 * only the one application's beans start.
 */
public final class ChildJvm implements AutoCloseable {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final List<String> command;
    private final Path log;
    private final int port;
    private volatile Process process;

    private ChildJvm(List<String> command, Path log, int port) {
        this.command = command;
        this.log = log;
        this.port = port;
    }

    /**
     * @param mainClass  the application's main class
     * @param leaveOut   fragments of classpath entries to leave out (another application's module)
     * @param properties system properties for the application (its Micronaut settings)
     * @param port       the loopback port it serves HTTP on, to wait for
     * @param log        where its output goes (appended)
     * @return the JVM, not started yet
     */
    public static ChildJvm of(String mainClass, List<String> leaveOut, Map<String, String> properties, int port, Path log) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx256m");
        command.add("-XX:TieredStopAtLevel=1");
        properties.forEach((k, v) -> command.add("-D" + k + "=" + v));
        command.add("-cp");
        command.add(String.join(File.pathSeparator, classpath().stream()
            .filter(entry -> leaveOut.stream().noneMatch(entry::contains)).toList()));
        command.add(mainClass);
        return new ChildJvm(List.copyOf(command), log, port);
    }

    /**
     * Starts the JVM and waits until its port answers HTTP (any status).
     *
     * @return this
     * @throws IllegalStateException when it exits first, or does not answer within 60 s
     */
    public ChildJvm start() {
        try {
            Files.createDirectories(log.toAbsolutePath().getParent());
            process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + command.get(command.size() - 1) + ": " + e.getMessage(), e);
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < until) {
            if (!process.isAlive()) {
                throw new IllegalStateException(command.get(command.size() - 1) + " exited with "
                    + process.exitValue() + " before it answered; see " + log.toAbsolutePath());
            }
            try {
                HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding());
                return this;
            } catch (IOException e) {
                sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for port " + port, e);
            }
        }
        throw new IllegalStateException("nothing answered on port " + port + " within 60 s; see " + log.toAbsolutePath());
    }

    /**
     * Waits for the JVM to end.
     *
     * @param timeout how long at most
     * @return its exit code ({@code 137} after a {@code Runtime.halt(137)}), or {@code -1} when it still runs
     */
    public int awaitExit(Duration timeout) {
        try {
            Process p = process;
            return p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? p.exitValue() : -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** Stops the JVM as {@code kill} (SIGTERM) does: its shutdown hooks run, the application closes. */
    public void stop(Duration timeout) {
        Process p = process;
        if (p != null) {
            p.destroy();
            try {
                if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    kill();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Kills the JVM at once, as {@code kill -9} does. */
    public void kill() {
        Process p = process;
        if (p != null) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        kill();
    }

    /**
     * @return this JVM's classpath: surefire's test classpath, else the entries of the context
     *     class loader when it is a {@link URLClassLoader} ({@code exec:java}), else
     *     {@code java.class.path}
     */
    static List<String> classpath() {
        String tests = System.getProperty("surefire.test.class.path");
        if (tests != null && !tests.isBlank()) {
            return Arrays.asList(tests.split(File.pathSeparator));
        }
        if (Thread.currentThread().getContextClassLoader() instanceof URLClassLoader loader && loader.getURLs().length > 1) {
            List<String> entries = new ArrayList<>();
            for (URL url : loader.getURLs()) {
                try {
                    entries.add(Path.of(url.toURI()).toString());
                } catch (URISyntaxException | IllegalArgumentException e) {
                    entries.add(url.getPath());
                }
            }
            return entries;
        }
        return Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator));
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
