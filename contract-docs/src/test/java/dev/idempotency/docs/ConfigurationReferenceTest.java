package dev.idempotency.docs;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConfigurationReferenceTest {

    /** A stand-in configuration class for {@code {@value}} lookups. */
    static final class Sample implements SampleDefaults {
        static final int DEFAULT_SIZE = 100_000;
        static final String DEFAULT_NAME = "abc";
    }

    interface SampleDefaults {
        double DEFAULT_FACTOR = 2.0;
    }

    @Test
    @DisplayName("the committed reference page's tables are what the code's settings say")
    void committedReferenceMatchesTheCode() throws IOException {
        Path page = Path.of("src/docs/asciidoc/reference/configuration.adoc");
        String committed = Files.readString(page, StandardCharsets.UTF_8);
        String current = ConfigurationReference.page(committed, ConfigurationReference.read(getClass().getClassLoader()));
        assertThat(committed)
            .as("%s differs from the code's settings: regenerate it with mvn -q -pl contract-docs -am process-classes"
                + " -Dreference.update=true", page)
            .isEqualTo(current);
    }

    @Test
    @DisplayName("{@value} references resolve to the constant, from the class or an interface it implements")
    void resolvesValues() {
        String text = ConfigurationReference.resolveValues(
            "Size. Default {@value #DEFAULT_SIZE}.\n  Name {@value #DEFAULT_NAME}, factor {@value #DEFAULT_FACTOR}.",
            Sample.class, getClass().getClassLoader());
        assertThat(text).isEqualTo("Size. Default 100000. Name abc, factor 2.0.");
    }

    @Test
    @DisplayName("an unresolvable {@value} fails instead of printing the tag")
    void unresolvableValueFails() {
        assertThatThrownBy(() -> ConfigurationReference.resolveValues("Default {@value #NOPE}.", Sample.class,
            getClass().getClassLoader())).hasMessageContaining("NOPE");
    }

    @Test
    @DisplayName("javadoc tags become AsciiDoc, and a pipe cannot break the table")
    void javadocToAsciidoc() {
        assertThat(ConfigurationReference.asciidoc(
            "Set {@code a|b} or {@link dev.idempotency.server.Idempotent}; see {@link #setLease lease} and {@code <url>}."))
            .isEqualTo("Set `+a\\|b+` or `Idempotent`; see lease and `+<url>+`.");
    }

    @Test
    @DisplayName("the default column comes from the description; a property without one fails the build")
    void defaults(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        Path meta = dir.resolve(ConfigurationReference.METADATA);
        Files.createDirectories(meta.getParent());
        Files.writeString(meta, """
            {"groups":[{"name":"idempotency.sample","type":"%1$s","description":"Sample settings."}],
             "properties":[
               {"name":"idempotency.sample.size","type":"int","sourceType":"%1$s",
                "description":"How many. Default {@value #DEFAULT_SIZE}: plenty."},
               {"name":"idempotency.sample.server","type":"java.lang.String","sourceType":"%1$s",
                "description":"Which one. Default: none, meaning the default connection."},
               {"name":"idempotency.sample.statuses","type":"java.util.Set","sourceType":"%1$s",
                "description":"Retried. Default 408, 425, 429; a 409 only sometimes."},
               {"name":"idempotency.sample.wait","type":"java.time.Duration","sourceType":"%1$s",
                "description":"How long. Default 1m. Longer costs memory."}]}
            """.formatted(Sample.class.getName()), StandardCharsets.UTF_8);
        List<ConfigurationReference.Group> groups = ConfigurationReference.read(loader(dir));
        assertThat(groups).singleElement().satisfies(g -> {
            assertThat(g.name()).isEqualTo("idempotency.sample");
            assertThat(g.properties()).extracting(ConfigurationReference.Property::defaultValue)
                .containsExactly("100000", "none", "408, 425, 429", "1m");
            // the Default column says it: a sentence that only states the default is not repeated
            assertThat(g.properties()).extracting(ConfigurationReference.Property::description)
                .containsExactly("How many. Default 100000: plenty.", "Which one. Default: none, meaning the default connection.",
                    "Retried. Default 408, 425, 429; a 409 only sometimes.", "How long. Longer costs memory.");
            assertThat(g.properties()).extracting(ConfigurationReference.Property::type)
                .containsExactly("integer", "string", "list", "duration");
        });
        assertThat(ConfigurationReference.defaults(groups)).contains(":default-idempotency-sample-size: 100000\n");

        Files.writeString(meta, """
            {"groups":[{"name":"idempotency.sample","type":"%1$s","description":"Sample."}],
             "properties":[{"name":"idempotency.sample.size","type":"int","sourceType":"%1$s",
                "description":"How many."}]}
            """.formatted(Sample.class.getName()), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> ConfigurationReference.read(loader(dir)))
            .hasMessageContaining("idempotency.sample.size").hasMessageContaining("names no default");
    }

    /** Sees only the metadata in {@code dir}, and this test's classes. */
    private ClassLoader loader(Path dir) throws IOException {
        return new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader()) {
            @Override
            public java.util.Enumeration<URL> getResources(String name) throws IOException {
                return findResources(name);
            }
        };
    }
}
