package dev.idempotency.docs;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The conventions of ARCHITECTURE.md ("One convention for every published module"), read from the
 * sources of the whole repository (surefire runs in {@code contract-docs}, so the root is
 * {@code ..}). Each failure names the file and the rule it breaks.
 */
class PackagingRulesTest {

    private static final Path ROOT = Path.of("..");
    /** The published modules' source roots, with the root package each one owns. */
    private static final Map<String, String> PUBLISHED = Map.of(
        "operation-context", "dev.idempotency.context",
        "server-filter/core", "dev.idempotency.server",
        "server-filter/redis", "dev.idempotency.store.redis",
        "server-filter/postgres", "dev.idempotency.store.postgres",
        "server-filter/messaging", "dev.idempotency.messaging",
        "server-filter/rabbitmq", "dev.idempotency.rabbitmq",
        "server-filter/kafka", "dev.idempotency.kafka",
        "server-filter/openapi", "dev.idempotency.openapi",
        "client-sdk", "dev.idempotency.client");
    /** The modules whose implementation lives under {@code internal} (the three). */
    private static final List<String> SPLIT = List.of("server-filter/core", "client-sdk", "server-filter/messaging");
    private static final int MAX_LINES = 550;
    /**
     * Main sources allowed past {@link #MAX_LINES}, each with the reason. Not a place to park a
     * class that grew: split it along its seams instead.
     */
    private static final Map<String, String> LONG_FILES = Map.of();
    private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
    private static final Pattern PUBLIC_TYPE = Pattern.compile(
        "^(?:@[\\w.]+(?:\\([^)]*\\))?\\s+)*public (?:final |abstract |sealed |non-sealed )*(?:class|interface|record|enum|@interface) (\\w+)",
        Pattern.MULTILINE);
    private static final Pattern TOP_TYPE = Pattern.compile(
        "^(?:public |final |abstract |sealed |non-sealed )*(?:class|interface|record|enum|@interface) \\w+", Pattern.MULTILINE);

    @Test
    @DisplayName("No two public types of the published modules share a simple name")
    void oneNamePerConcept() throws IOException {
        Map<String, List<String>> byName = new TreeMap<>();
        for (String module : PUBLISHED.keySet()) {
            sources(module).forEach((path, text) -> {
                Matcher m = PUBLIC_TYPE.matcher(text);
                if (m.find()) {
                    byName.computeIfAbsent(m.group(1), n -> new ArrayList<>()).add(path.toString());
                }
            });
        }
        assertThat(byName).isNotEmpty();
        assertThat(byName.entrySet().stream().filter(e -> e.getValue().size() > 1).map(Map.Entry::toString))
            .as("public types of the published modules that share a simple name").isEmpty();
    }

    @Test
    @DisplayName("A public type of an internal package is @Internal; no module imports another's internal packages")
    void internalIsInternal() throws IOException {
        List<String> broken = new ArrayList<>();
        for (Map.Entry<String, String> module : PUBLISHED.entrySet()) {
            sources(module.getKey()).forEach((path, text) -> {
                String pkg = packageOf(text);
                if (pkg.contains(".internal") && PUBLIC_TYPE.matcher(text).find()
                    && !text.contains("@Internal")) {
                    broken.add(path + ": public in an internal package without @Internal");
                }
                for (String other : PUBLISHED.values()) {
                    if (!other.equals(module.getValue()) && text.contains("import " + other + ".internal.")) {
                        broken.add(path + ": imports " + other + ".internal");
                    }
                }
            });
        }
        assertThat(broken).isEmpty();
    }

    @Test
    @DisplayName("core, client-sdk and messaging keep their implementation under internal, in packages of at most 15 types")
    void implementationUnderInternal() throws IOException {
        for (String module : SPLIT) {
            Map<String, Integer> internalTypes = new TreeMap<>();
            boolean[] hasInternal = {false};
            sources(module).forEach((path, text) -> {
                String pkg = packageOf(text);
                if (pkg.contains(".internal")) {
                    hasInternal[0] = true;
                    internalTypes.merge(pkg, 1, Integer::sum);
                }
            });
            assertThat(hasInternal[0]).as("%s has internal packages", module).isTrue();
            assertThat(internalTypes).allSatisfy((pkg, n) -> assertThat(n).as("types in %s", pkg).isLessThanOrEqualTo(15));
        }
    }

    /**
     * The packages of client-sdk and messaging, top to bottom, as {@code PackageLayersTest} has
     * them for the core: a package imports only packages below it. The API package is the bottom
     * layer, because the implementation implements and returns its types.
     */
    private static final Map<String, List<String>> LAYERS = Map.of(
        "client-sdk", List.of("dev.idempotency.client.internal", "dev.idempotency.client.internal.metrics",
            "dev.idempotency.client.internal.policy", "dev.idempotency.client"),
        "server-filter/messaging", List.of("dev.idempotency.messaging.internal", "dev.idempotency.messaging"));
    /**
     * The only imports from an API package up into its module's {@code internal}, each with the
     * reason. A new one is a design decision, to be named here, not an accident of an import.
     */
    private static final Map<String, String> API_REACHES_INTERNAL = Map.of(
        "IdempotentClient -> DefaultIdempotentClient", "the API's factory method creates the implementation",
        "IdempotentCalls -> DeclarativeCall", "the declarative client's entry point hands over to its runner",
        "IdempotentRequest -> Keys", "a caller-given key is checked by the same rules as a derived one",
        "IdempotentConsumer -> MessagingMetrics", "the consumer counts its outcomes (not API: Micrometer stays optional)",
        "IdempotentConsumer -> TraceContext", "the consumer continues the publisher's trace (M11)",
        "IdempotentConsumer -> ConsumerTracing", "the consumer's delivery span (O4; not API: OpenTelemetry stays optional)",
        "IdempotentConsumers -> ConsumerTracing", "the factory hands each consumer the tracing",
        "IdempotentConsumers -> MessagingMetrics", "the factory hands each consumer the metrics",
        "OutboxRelay -> MessagingMetrics", "the relay counts deliveries",
        "ReceivedMessage -> TraceContext", "a received message reads its traceparent");
    private static final Pattern PROJECT_IMPORT = Pattern.compile(
        "^import (?:static )?(dev\\.idempotency(?:\\.[a-z]\\w*)*)\\.([A-Z]\\w*)", Pattern.MULTILINE);

    @Test
    @DisplayName("In client-sdk and messaging no import runs from a lower package up to a higher one,"
        + " except the API's named entry points into internal")
    void internalLayers() throws IOException {
        List<String> upward = new ArrayList<>();
        List<String> allowedSeen = new ArrayList<>();
        for (Map.Entry<String, List<String>> module : LAYERS.entrySet()) {
            List<String> layers = module.getValue();
            sources(module.getKey()).forEach((path, text) -> {
                String pkg = packageOf(text);
                assertThat(layers).as("the layer of %s (add a new package to LAYERS)", path).contains(pkg);
                String type = path.getFileName().toString().replace(".java", "");
                Matcher imports = PROJECT_IMPORT.matcher(text);
                while (imports.find()) {
                    String imported = imports.group(1);
                    if (!imported.startsWith(layers.get(layers.size() - 1))) {
                        continue; // another module's package: the module graph orders those
                    }
                    assertThat(layers).as("the layer of %s, imported by %s", imported, path).contains(imported);
                    if (layers.indexOf(imported) < layers.indexOf(pkg)) {
                        String edge = type + " -> " + imports.group(2);
                        if (API_REACHES_INTERNAL.containsKey(edge)) {
                            allowedSeen.add(edge);
                        } else {
                            upward.add(path + " (" + pkg + ") imports " + imported + "." + imports.group(2));
                        }
                    }
                }
            });
        }
        assertThat(upward).as("imports from a lower package up to a higher one").isEmpty();
        assertThat(allowedSeen).as("every named exception is still needed").containsExactlyInAnyOrderElementsOf(
            API_REACHES_INTERNAL.keySet());
    }

    @Test
    @DisplayName("No main source file is longer than about 550 lines, except those named with a reason")
    void filesStayReadable() throws IOException {
        List<String> tooLong = new ArrayList<>();
        List<Path> mainSources;
        try (Stream<Path> files = Files.walk(ROOT)) {
            mainSources = files.filter(p -> p.toString().endsWith(".java") || p.toString().endsWith(".kt"))
                .filter(p -> p.toString().contains("/src/main/") && !p.toString().contains("/target/")
                    && !p.toString().contains("/.git/"))
                .toList();
        }
        assertThat(mainSources).hasSizeGreaterThan(200);
        for (Path file : mainSources) {
            long lines;
            try (Stream<String> l = Files.lines(file)) {
                lines = l.count();
            }
            if (lines > MAX_LINES && !LONG_FILES.containsKey(file.getFileName().toString())) {
                tooLong.add(file + " (" + lines + " lines)");
            }
        }
        assertThat(tooLong).as("main sources past %d lines: split them along their seams", MAX_LINES).isEmpty();
    }

    private static Map<Path, String> sources(String module) throws IOException {
        Path dir = ROOT.resolve(module).resolve("src/main/java");
        Map<Path, String> sources = new TreeMap<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")
                && !f.getFileName().toString().equals("package-info.java")).toList()) {
                String text = Files.readString(file);
                if (TOP_TYPE.matcher(text).find()) {
                    sources.put(file, text);
                }
            }
        }
        assertThat(sources).as("sources of %s", module).isNotEmpty();
        return sources;
    }

    private static String packageOf(String source) {
        Matcher m = PACKAGE.matcher(source);
        assertThat(m.find()).isTrue();
        return m.group(1);
    }
}
