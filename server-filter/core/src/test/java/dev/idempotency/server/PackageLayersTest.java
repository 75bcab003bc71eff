package dev.idempotency.server;

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
 * The filter's packages are layers (see this package's javadoc): a package imports only packages
 * below it, and none holds more types than a reader can take in. Read from the sources, so a new
 * import that runs back up fails the build with the file and the import named.
 */
class PackageLayersTest {

    private static final String ROOT = "dev.idempotency.server";
    /** Top to bottom. */
    private static final List<String> LAYERS = List.of(
        ROOT + ".internal.config", ROOT + ".internal.management", ROOT + ".http", ROOT + ".internal.http",
        ROOT + ".internal.engine",
        ROOT + ".internal.response", ROOT + ".internal.runtime", ROOT + ".internal.telemetry",
        ROOT + ".internal.fingerprint", ROOT + ".internal.memory", ROOT + ".store.memory", ROOT + ".store", ROOT, ROOT + ".internal.util");
    private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
    private static final Pattern IMPORT = Pattern.compile(
        "^import (?:static )?(dev\\.idempotency\\.server(?:\\.[a-z]\\w*)*)\\.[A-Z]", Pattern.MULTILINE);
    private static final Path SOURCES = Path.of("src/main/java");

    @Test
    @DisplayName("No import runs from a lower package back up to a higher one")
    void noImportRunsUp() throws IOException {
        List<String> upward = new ArrayList<>();
        for (Map.Entry<Path, String> source : sources().entrySet()) {
            if (source.getKey().getFileName().toString().equals("package-info.java")) {
                continue; // documentation of a package, such as internal's overview, not a layer of its own
            }
            String pkg = packageOf(source.getValue());
            assertThat(LAYERS).as("the layer of %s (add a new package to LAYERS)", source.getKey()).contains(pkg);
            Matcher imports = IMPORT.matcher(source.getValue());
            while (imports.find()) {
                String imported = imports.group(1);
                assertThat(LAYERS).as("the layer of %s, imported by %s", imported, source.getKey()).contains(imported);
                if (LAYERS.indexOf(imported) < LAYERS.indexOf(pkg)) {
                    upward.add(source.getKey().getFileName() + " (" + pkg + ") imports " + imported);
                }
            }
        }
        assertThat(upward).as("imports from a lower package up to a higher one").isEmpty();
    }

    @Test
    @DisplayName("No package holds more than 15 types")
    void packagesStaySmall() throws IOException {
        Map<String, Integer> types = new TreeMap<>();
        sources().forEach((path, text) -> {
            if (!path.getFileName().toString().equals("package-info.java")) {
                types.merge(packageOf(text), 1, Integer::sum);
            }
        });
        assertThat(types).isNotEmpty();
        assertThat(types).allSatisfy((pkg, count) -> assertThat(count).as("types in %s", pkg).isLessThanOrEqualTo(15));
    }

    private static Map<Path, String> sources() throws IOException {
        Map<Path, String> sources = new TreeMap<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                sources.put(file, Files.readString(file));
            }
        }
        assertThat(sources).as("sources under %s", SOURCES.toAbsolutePath()).hasSizeGreaterThan(50);
        return sources;
    }

    private static String packageOf(String source) {
        Matcher m = PACKAGE.matcher(source);
        assertThat(m.find()).isTrue();
        return m.group(1);
    }
}
