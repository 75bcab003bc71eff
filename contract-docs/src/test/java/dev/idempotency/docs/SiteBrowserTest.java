package dev.idempotency.docs;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.ProblemCode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The built site (target/site) in a real browser, Debian's headless Chromium, at 1280 x 900 (issue
 * 11): every page's navigation leads to pages that load, every problem-code anchor of the contract
 * page scrolls into view, no page is wider than the window, the icons come from the site's own copy,
 * and no page asks another host for anything (the browser resolves no host name at all).
 *
 * <p>Needs {@code /usr/bin/chromium} and {@code /usr/bin/chromedriver} (Debian packages
 * {@code chromium} and {@code chromium-driver}). When they are missing and this runs as root, the
 * test installs them with apt-get, as {@code .ci/run} does; otherwise it fails and says how.
 */
class SiteBrowserTest {

    private static final Path CHROMIUM = Path.of(System.getProperty("chromium.binary", "/usr/bin/chromium"));
    private static final Path DRIVER = Path.of(System.getProperty("chromium.driver", "/usr/bin/chromedriver"));
    private static final int WIDTH = 1280;

    private static Path site;
    private static List<Path> pages;
    private static WebDriver browser;

    @BeforeAll
    static void openBrowser() throws Exception {
        site = Path.of(System.getProperty("site.dir", "target/site")).toAbsolutePath().normalize();
        assertThat(site.resolve("index.html")).as("the site was built (asciidoctor in process-classes)").exists();
        try (Stream<Path> files = Files.walk(site)) {
            pages = files.filter(f -> f.toString().endsWith(".html")).sorted().toList();
        }
        ensureChromium();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
            "--window-size=" + WIDTH + ",900",
            // no page may reach another host: with every host name unresolvable, such a request fails
            // and shows in the page's resource timing as one that did not load from file:
            "--host-resolver-rules=MAP * ~NOTFOUND");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(DRIVER.toFile())
            .usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        browser.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
    }

    @AfterAll
    static void closeBrowser() {
        if (browser != null) {
            browser.quit();
        }
    }

    private static void ensureChromium() throws IOException, InterruptedException {
        if (Files.isExecutable(CHROMIUM) && Files.isExecutable(DRIVER)) {
            return;
        }
        String missing = "Chromium for the site's browser test is missing (" + CHROMIUM + ", " + DRIVER
            + "): install the Debian packages chromium and chromium-driver (apt-get install -y chromium chromium-driver)";
        boolean root = "root".equals(System.getProperty("user.name"));
        assertThat(root).as(missing + "; not root, so the test cannot install them itself").isTrue();
        Process install = new ProcessBuilder("sh", "-c", "export DEBIAN_FRONTEND=noninteractive;"
            + " apt-get install -y chromium chromium-driver || (apt-get update && apt-get install -y chromium chromium-driver)")
            .inheritIO().start();
        assertThat(install.waitFor(10, TimeUnit.MINUTES) && install.exitValue() == 0).as(missing).isTrue();
        assertThat(Files.isExecutable(CHROMIUM) && Files.isExecutable(DRIVER)).as(missing).isTrue();
    }

    private static String url(Path page) {
        return page.toUri().toString();
    }

    private static Object js(String script, Object... args) {
        return ((JavascriptExecutor) browser).executeScript(script, args);
    }

    private static void open(String url) {
        browser.get(url);
        js("return document.fonts.ready.then(() => true)");
    }

    @Test
    @DisplayName("every page has the navigation, and every link in it opens a page of the site")
    void navigationWorksEverywhere() {
        Set<String> targets = new LinkedHashSet<>();
        for (Path page : pages) {
            open(url(page));
            List<WebElement> links = browser.findElements(By.cssSelector("nav.site-nav a"));
            assertThat(links).as("navigation on %s", site.relativize(page)).hasSizeGreaterThanOrEqualTo(pages.size());
            assertThat(browser.findElements(By.cssSelector("nav.site-nav a.current")))
                .as("the current page marked on %s", site.relativize(page)).hasSize(1);
            for (WebElement link : links) {
                targets.add(link.getAttribute("href"));
            }
        }
        assertThat(targets).as("nav targets").hasSize(pages.size());
        for (String target : targets) {
            assertThat(target).as("a link of the site, relative to it").startsWith("file:");
            assertThat(Path.of(URI.create(target))).as("page behind %s", target).exists();
            open(target);
            assertThat(browser.getTitle()).as("title of %s", target).isNotBlank();
            assertThat(browser.findElements(By.cssSelector("#content"))).as("content of %s", target).isNotEmpty();
        }
    }

    @Test
    @DisplayName("S20: every problem-code anchor of the contract page scrolls into view below the navigation")
    void problemAnchorsScrollIntoView() {
        Path contract = site.resolve("contract/index.html");
        for (ProblemCode code : ProblemCode.values()) {
            String fragment = code.type(IdempotencyConfigurationProperties.DEFAULT_CONTRACT_URL).getFragment();
            open(url(site.resolve("index.html"))); // from another page, as a client's link would
            open(url(contract) + "#" + fragment);
            Number top = (Number) js("const e = document.getElementById(arguments[0]);"
                + " return e ? e.getBoundingClientRect().top : null;", fragment);
            assertThat(top).as("anchor #%s exists", fragment).isNotNull();
            Number navBottom = (Number) js("return document.querySelector('nav.site-nav').getBoundingClientRect().bottom");
            Number height = (Number) js("return window.innerHeight");
            assertThat(top.doubleValue()).as("#%s: top of its heading", fragment)
                .isGreaterThanOrEqualTo(navBottom.doubleValue() - 1).isLessThan(height.doubleValue() / 2);
        }
    }

    @Test
    @DisplayName("no page is wider than a 1280 px window")
    void noHorizontalOverflow() {
        for (Path page : pages) {
            open(url(page));
            Number scroll = (Number) js("return document.documentElement.scrollWidth");
            Number client = (Number) js("return document.documentElement.clientWidth");
            assertThat(scroll.longValue()).as("%s is %s px wide in a %s px window", site.relativize(page), scroll, client)
                .isLessThanOrEqualTo(client.longValue());
        }
    }

    @Test
    @DisplayName("nothing is requested from another host, and the icons come from the site's own font")
    void selfContained() {
        List<String> foreign = new ArrayList<>();
        for (Path page : pages) {
            open(url(page));
            @SuppressWarnings("unchecked")
            List<String> resources = (List<String>) js("return performance.getEntriesByType('resource').map(e => e.name)"
                + ".concat(Array.from(document.querySelectorAll('link[href], script[src], img[src], iframe[src]'))"
                + ".map(e => e.href || e.src))");
            for (String resource : resources) {
                if (!resource.startsWith("file:") && !resource.startsWith("data:")) {
                    foreign.add(site.relativize(page) + ": " + resource);
                }
            }
        }
        assertThat(foreign).as("resources from other hosts").isEmpty();

        // an admonition's icon is drawn with Font Awesome, loaded from the site itself
        open(url(site.resolve("guides/quickstart.html")));
        assertThat(browser.findElements(By.cssSelector(".admonitionblock td.icon i.fa"))).isNotEmpty();
        assertThat((Boolean) js("return Array.from(document.fonts).some(f => f.family.replace(/[\"']/g, '')"
            + " === 'FontAwesome' && f.status === 'loaded')")).as("Font Awesome loaded from the site").isTrue();
        String glyph = (String) js("return getComputedStyle(document.querySelector('.admonitionblock td.icon i.fa'),"
            + " '::before').content");
        assertThat(glyph).as("the icon's glyph").isNotIn("none", "normal", "");
        assertThat(new File(site.toFile(), "assets/font-awesome/fonts/fontawesome-webfont.woff2")).exists();
    }
}
