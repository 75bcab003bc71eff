package dev.idempotency.benchmarks.load;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** The echo service in a JVM of its own. */
final class LoadService implements AutoCloseable {
    final Process process;
    final int port;
    private final BufferedReader out;

    private LoadService(Process process, int port, BufferedReader out) {
        this.process = process;
        this.port = port;
        this.out = out;
    }

    static LoadService start(Map<String, String> props, List<String> jvm) throws Exception {
        return start(System.getProperty("java.class.path"), props, jvm);
    }

    /** @param classpath where the service's classes come from: this benchmark's, or another build's jar */
    static LoadService start(String classpath, Map<String, String> props, List<String> jvm) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "-Xms1g", "-Xmx1g"));
        command.addAll(jvm);
        command.addAll(List.of("-cp", classpath, LoadApp.class.getName()));
        props.forEach((k, v) -> command.add(k + "=" + v));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null) {
            if (line.startsWith("READY ")) {
                return new LoadService(p, Integer.parseInt(line.substring(6).trim()), out);
            }
        }
        throw new IllegalStateException("the service did not start: exit " + p.waitFor());
    }

    /** @return the CPU time the service's process has used, or -1 where {@code /proc} cannot tell */
    long cpuNanos() {
        return ProcCpu.process(process.pid());
    }

    /** @return the CPU time the service's live threads have used, by group (see {@link ProcCpu}) */
    Map<ProcCpu.Group, Long> cpuNanosByThreadGroup() {
        return ProcCpu.byThreadGroup(process.pid());
    }

    /**
     * @return the heap the service's threads have allocated so far (see {@link LoadApp}), or -1
     *     where its JVM cannot tell
     */
    long allocatedBytes() throws IOException {
        process.getOutputStream().write("allocated\n".getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
        String line;
        while ((line = out.readLine()) != null) {
            if (line.startsWith("ALLOCATED ")) {
                return Long.parseLong(line.substring(10).trim());
            }
        }
        throw new IOException("the service ended without answering");
    }

    /** Stores the record the replay runs replay (or replays it, when it is there). */
    void prime(String key) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/idem/echo"))
            .header("Content-Type", "application/json").header("Idempotency-Key", "\"" + key + "\"")
            .POST(HttpRequest.BodyPublishers.ofString(Wrk.BODY)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 201) {
            throw new IllegalStateException("priming the replay key failed: " + r.statusCode() + " " + r.body());
        }
    }

    @Override
    public void close() throws Exception {
        process.getOutputStream().close();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
