package dev.idempotency.openapi;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Compiles a small application the way a build does: {@code javac} in its own process, the
 * application's classes on the class path (the filter, Micronaut HTTP), and on the annotation
 * processor path micronaut-inject-java, micronaut-openapi and this module, but not the filter.
 * A separate process keeps micronaut-openapi's static state out of the test JVM and proves the
 * visitor needs nothing from the filter at compile time.
 */
final class OpenApiCompilation {

    private final Path dir;
    private final Map<String, String> sources = new LinkedHashMap<>();
    private final List<String> options = new ArrayList<>();
    private String applicationProperties;
    private boolean swaggerOnClassPath = true;
    private boolean openApiProcessor = true;

    private OpenApiCompilation(Path dir) {
        this.dir = dir;
    }

    static OpenApiCompilation in(Path dir) {
        return new OpenApiCompilation(dir);
    }

    /** @param qualifiedName e.g. {@code demo.OrdersController} */
    OpenApiCompilation source(String qualifiedName, String code) {
        sources.put(qualifiedName, code);
        return this;
    }

    /** The application's {@code src/main/resources/application.properties}, which micronaut-openapi reads. */
    OpenApiCompilation applicationProperties(String text) {
        this.applicationProperties = text;
        return this;
    }

    /** Without swagger-annotations on the class path: an application that uses none of them. */
    OpenApiCompilation withoutSwaggerAnnotations() {
        this.swaggerOnClassPath = false;
        return this;
    }

    /** Without micronaut-openapi on the processor path, this module alone. */
    OpenApiCompilation withoutOpenApiProcessor() {
        this.openApiProcessor = false;
        this.swaggerOnClassPath = false;
        return this;
    }

    OpenApiCompilation option(String option) {
        options.add(option);
        return this;
    }

    Result compile() {
        try {
            Path src = Files.createDirectories(dir.resolve("src/main/java"));
            Path out = Files.createDirectories(dir.resolve("target/classes"));
            List<String> files = new ArrayList<>();
            for (Map.Entry<String, String> e : sources.entrySet()) {
                Path file = src.resolve(e.getKey().replace('.', '/') + ".java");
                Files.createDirectories(file.getParent());
                Files.writeString(file, e.getValue());
                files.add(file.toString());
            }
            if (applicationProperties != null) {
                Path resources = Files.createDirectories(dir.resolve("src/main/resources"));
                Files.writeString(resources.resolve("application.properties"), applicationProperties);
            }
            String self = selfLocation();
            List<String> classPath = new ArrayList<>();
            List<String> processorPath = new ArrayList<>();
            for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                boolean openApi = entry.contains("micronaut-openapi") || entry.contains("swagger-");
                boolean filter = entry.contains("idempotency-server-filter") || entry.contains("server-filter/core/target");
                if (!entry.equals(self) && !(openApi && !(swaggerOnClassPath && entry.contains("swagger-annotations")))) {
                    classPath.add(entry);
                }
                if (!filter && !entry.equals(self) && (openApiProcessor || !openApi)) {
                    processorPath.add(entry);
                }
            }
            processorPath.add(self);
            List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "javac").toString(),
                "-d", out.toString(),
                "-cp", String.join(File.pathSeparator, classPath),
                "-processorpath", String.join(File.pathSeparator, processorPath),
                "-Amicronaut.openapi.project.dir=" + dir));
            command.addAll(options);
            command.addAll(files);
            Path log = dir.resolve("javac.log");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!process.waitFor(3, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw new IllegalStateException("javac did not finish in 3 minutes");
            }
            return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8), out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String selfLocation() {
        try {
            return Path.of(IdempotencyOpenApiVisitor.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * @param exitCode javac's exit code
     * @param output   everything javac printed
     * @param classes  the class output directory
     */
    record Result(int exitCode, String output, Path classes) {

        /** @return the generated OpenAPI document ({@code META-INF/swagger/*.yml}), if one was written */
        Optional<Map<String, Object>> document() {
            Path swagger = classes.resolve("META-INF/swagger");
            if (!Files.isDirectory(swagger)) {
                return Optional.empty();
            }
            try (Stream<Path> files = Files.list(swagger)) {
                List<Path> yml = files.filter(p -> p.toString().endsWith(".yml")).toList();
                if (yml.size() != 1) {
                    throw new IllegalStateException("expected one document, found " + yml);
                }
                return Optional.of(new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(yml.get(0))));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
