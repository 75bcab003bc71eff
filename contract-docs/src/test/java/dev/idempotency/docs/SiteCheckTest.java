package dev.idempotency.docs;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.ProblemCode;
import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;
import org.jsoup.nodes.Element;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The docs check: reads the site the build just made (target/site) and fails the build when a
 * problem {@code type} the filter sends, or any link between the site's pages, leads nowhere.
 */
class SiteCheckTest {

    private static Path site;
    private static URI baseUrl;
    private static final Map<Path, Document> PAGES = new HashMap<>();

    @BeforeAll
    static void loadSite() throws IOException {
        site = Path.of(System.getProperty("site.dir", "target/site")).toAbsolutePath().normalize();
        baseUrl = URI.create(System.getProperty("site.base-url", "https://idempotency.dev/"));
        assertThat(site.resolve("index.html")).as("the site was built (asciidoctor in process-classes)").exists();
        try (Stream<Path> files = Files.walk(site)) {
            for (Path p : files.filter(f -> f.toString().endsWith(".html")).toList()) {
                PAGES.put(p, Jsoup.parse(p.toFile(), StandardCharsets.UTF_8.name()));
            }
        }
    }

    @Test
    @DisplayName("S20: the default contract-url is the published site's contract page")
    void defaultContractUrlIsTheContractPage() {
        URI contract = IdempotencyConfigurationProperties.DEFAULT_CONTRACT_URL;
        assertThat(contract.toString()).startsWith(baseUrl.toString());
        assertThat(published(contract)).as("page for %s", contract).isPresent();
        assertThat(published(contract).get().title()).isEqualTo("The Idempotency-Key contract");
    }

    @Test
    @DisplayName("S20: every problem type the filter sends resolves to an anchor on the contract page")
    void everyProblemTypeResolves() {
        for (ProblemCode code : ProblemCode.values()) {
            URI type = code.type(IdempotencyConfigurationProperties.DEFAULT_CONTRACT_URL);
            Document page = published(type).orElseThrow(() -> new AssertionError("no page for " + type));
            Element anchor = page.getElementById(type.getFragment());
            assertThat(anchor).as("anchor #%s on %s", type.getFragment(), type).isNotNull();
            // the anchor is the code's own section, which names its status and what the client must do
            Element section = anchor.tagName().equals("h3") ? anchor.parent() : anchor;
            assertThat(section.text()).as("section of %s", code)
                .contains(code.code()).contains(String.valueOf(code.status())).contains("What to do");
        }
    }

    @Test
    @DisplayName("the contract page has its sections in the published order")
    void contractSectionsInOrder() {
        Document contract = page("contract/index.html");
        List<String> ids = contract.select("#content h2").eachAttr("id");
        assertThat(ids).containsSubsequence("purpose", "sending", "scope", "storage", "replay", "errors",
            "concurrency", "methods", "expiry");
        for (String sub : List.of("format", "length", "who-generates", "retention", "lease", "statuses", "headers",
            "body-size", "omitted-bodies")) {
            assertThat(contract.getElementById(sub)).as("#%s", sub).isNotNull();
        }
    }

    @Test
    @DisplayName("every link between the site's pages leads to a page and anchor that exist")
    void internalLinksResolve() {
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Map.Entry<Path, Document> e : PAGES.entrySet()) {
            for (Element a : e.getValue().select("a[href]")) {
                String href = a.attr("href");
                URI uri = URI.create(href.replace(" ", "%20"));
                Optional<String> problem;
                if (uri.isAbsolute() || href.startsWith("//")) {
                    if (!href.startsWith(baseUrl.toString())) {
                        continue; // an external page: not ours to check
                    }
                    problem = resolve(published(uri), uri.getFragment());
                } else {
                    Path target = uri.getPath() == null || uri.getPath().isEmpty() ? e.getKey()
                        : e.getKey().getParent().resolve(uri.getPath()).normalize();
                    problem = resolve(load(target), uri.getFragment());
                }
                checked++;
                problem.ifPresent(p -> broken.add(site.relativize(e.getKey()) + ": " + href + " (" + p + ")"));
            }
        }
        assertThat(checked).as("links checked").isGreaterThan(50);
        assertThat(broken).as("broken links").isEmpty();
    }

    @Test
    @DisplayName("the configuration reference lists every property of the configuration metadata")
    void configurationReferenceIsComplete() throws IOException {
        Document reference = page("reference/configuration.html");
        List<ConfigurationReference.Group> groups = ConfigurationReference.read(getClass().getClassLoader());
        for (String group : List.of("idempotency", "idempotency.store.memory", "idempotency.store.redis",
            "idempotency.store.postgres", "idempotency.client.<name>")) {
            assertThat(groups).extracting(ConfigurationReference.Group::name).contains(group);
        }
        for (ConfigurationReference.Group g : groups) {
            for (ConfigurationReference.Property p : g.properties()) {
                Element anchor = reference.getElementById(ConfigurationReference.anchor(p.name()));
                assertThat(anchor).as("row of %s", p.name()).isNotNull();
                Element row = anchor.closest("tr");
                assertThat(row).isNotNull();
                assertThat(row.select("td").get(2).text()).isEqualTo(p.defaultValue());
            }
        }
        Element contractUrl = reference.getElementById("idempotency-contract-url").closest("tr");
        assertThat(contractUrl.select("td").get(2).text())
            .isEqualTo(IdempotencyConfigurationProperties.DEFAULT_CONTRACT_PAGE);
        Element lease = reference.getElementById("idempotency-lease").closest("tr");
        assertThat(lease.select("td").get(2).text()).isEqualTo("30s");
    }

    @Test
    @DisplayName("the commands the site's home page shows are the ones in the README")
    void homePageCommandsMatchReadme() throws IOException {
        String readme = Files.readString(Path.of("..", "README.md")); // surefire runs in the module's directory
        List<String> commands = page("index.html").select("pre").eachText().stream()
            .flatMap(String::lines).map(String::trim).filter(l -> l.startsWith("mvn ")).toList();
        assertThat(commands).isNotEmpty();
        for (String command : commands) {
            assertThat(readme).as("README.md shows %s", command).contains(command);
        }
    }

    @Test
    @DisplayName("every link from the READMEs into the published site resolves")
    void readmeLinksIntoTheSiteResolve() throws IOException {
        Pattern link = Pattern.compile(Pattern.quote(baseUrl.toString()) + "[^\\s)>\"'`]*");
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Path readme : List.of(Path.of("..", "README.md"), Path.of("..", "examples", "payments-service", "README.md"),
            Path.of("..", "examples", "payments-client", "README.md"))) {
            Matcher m = link.matcher(Files.readString(readme));
            while (m.find()) {
                URI uri = URI.create(m.group());
                checked++;
                resolve(published(uri), uri.getFragment()).ifPresent(p -> broken.add(readme + ": " + uri + " (" + p + ")"));
            }
        }
        assertThat(checked).as("links checked").isGreaterThan(3);
        assertThat(broken).as("broken links").isEmpty();
    }

    @Test
    @DisplayName("no page shows an unresolved include, attribute or tag")
    void nothingUnresolved() {
        Pattern leftovers = Pattern.compile("Unresolved directive|\\{(default-|generated|examples)[\\w-]*}");
        for (Map.Entry<Path, Document> e : PAGES.entrySet()) {
            Matcher m = leftovers.matcher(e.getValue().text());
            if (m.find()) {
                throw new AssertionError(site.relativize(e.getKey()) + " shows " + m.group());
            }
        }
    }

    @Test
    @DisplayName("every Java snippet shows the imports it needs, so it can be pasted")
    void javaSnippetsShowTheirImports() {
        int checked = 0;
        for (Map.Entry<Path, Document> e : PAGES.entrySet()) {
            for (Element code : e.getValue().select("pre code[data-lang=java]")) {
                checked++;
                String text = code.wholeText();
                assertThat(text).as("a Java snippet on %s: %s", site.relativize(e.getKey()),
                    text.substring(0, Math.min(80, text.length()))).contains("import ");
                // every annotation and type it uses from a package of ours or Micronaut's is imported
                Matcher used = Pattern.compile("@(Idempotent|IdempotentCall|Transactional|Controller|Client|Singleton)\\b")
                    .matcher(text);
                while (used.find()) {
                    assertThat(text).as("%s on %s", used.group(), site.relativize(e.getKey()))
                        .containsPattern("import [\\w.]+\\." + used.group(1) + ";");
                }
            }
        }
        assertThat(checked).as("Java snippets checked").isGreaterThan(5);
    }

    /** The built page behind a published URL: {@code base/contract/} is {@code contract/index.html}. */
    private static Optional<Document> published(URI url) {
        String path = url.getPath();
        String base = baseUrl.getPath();
        if (!url.toString().startsWith(baseUrl.toString()) || !path.startsWith(base)) {
            return Optional.empty();
        }
        return load(site.resolve(path.substring(base.length())).normalize());
    }

    private static Optional<Document> load(Path target) {
        Path file = Files.isDirectory(target) ? target.resolve("index.html") : target;
        return Optional.ofNullable(PAGES.get(file.normalize()));
    }

    private static Optional<String> resolve(Optional<Document> page, String fragment) {
        if (page.isEmpty()) {
            return Optional.of("no such page");
        }
        if (fragment != null && !fragment.isEmpty() && page.get().getElementById(fragment) == null) {
            return Optional.of("no anchor #" + fragment);
        }
        return Optional.empty();
    }

    private static Document page(String relative) {
        return load(site.resolve(relative)).orElseThrow(() -> new AssertionError("no page " + relative));
    }
}
