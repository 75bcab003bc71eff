package dev.idempotency.docs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Generates the site's configuration reference from the configuration metadata that Micronaut's
 * annotation processor writes for every {@code @ConfigurationProperties} class
 * ({@code META-INF/spring-configuration-metadata.json} in each module's jar), so the reference
 * is the setters' javadoc and cannot drift from the code. Only classes under
 * {@code dev.idempotency} are documented.
 *
 * <p>Writes two AsciiDoc files into the directory given as the first argument:
 * {@code configuration-properties.adoc} (one table per property group) and
 * {@code configuration-defaults.adoc} (one attribute per property, e.g.
 * {@code {default-idempotency-lease}}, which the contract page uses for the numbers it states).
 * The tables are also committed, in the reference page given as the second argument, below its
 * {@link #GENERATED_MARKER} line, so the reference reads in the repository without a build; with
 * {@code -Dreference.update=true} this rewrites that part of the page, and
 * {@code ConfigurationReferenceTest} fails while it differs from what the code says.
 * Fails, and so fails the build, when a property's description names no default or a
 * {@code {@value}} reference cannot be resolved.
 */
public final class ConfigurationReference {

    static final String METADATA = "META-INF/spring-configuration-metadata.json";
    /** Only this project's configuration classes; Micronaut's own jars carry metadata too. */
    private static final String OWN_PACKAGE = "dev.idempotency.";

    /** Groups in the order the reference shows them; any other group follows, by name. */
    private static final List<String> GROUP_ORDER = List.of(
        "idempotency", "idempotency.store", "idempotency.store.memory", "idempotency.store.redis", "idempotency.store.postgres",
        "idempotency.outbox", "idempotency.rabbitmq", "idempotency.rabbitmq.exchanges.*",
        "idempotency.rabbitmq.consumers.*", "idempotency.kafka", "idempotency.kafka.consumers.*", "idempotency.client.*");

    private static final Pattern VALUE = Pattern.compile("\\{@value\\s+([\\w.]*)#(\\w+)}");
    private static final Pattern CODE = Pattern.compile("\\{@code\\s+((?:[^{}]|\\{[^{}]*})*)}");
    private static final Pattern LINK = Pattern.compile("\\{@link(?:plain)?\\s+([\\w.#()]+)(?:\\s+([^}]+))?}");
    private static final Pattern DEFAULT = Pattern.compile(
        "\\bDefault:?\\s+(.+?)(?=[.;:](?:\\s|$)|,\\s+(?:the|meaning)\\b|$)");

    /** One property, ready to print. */
    record Property(String name, String type, String defaultValue, String description) {
    }

    /** One {@code @ConfigurationProperties} class. */
    record Group(String name, String description, List<Property> properties) {
    }

    /** The reference page's line below which everything is this generator's output. */
    static final String GENERATED_MARKER = "// Generated below this line by ConfigurationReference from the code's configuration"
        + " metadata: do not edit. After a setting changes: mvn -q -pl contract-docs -am process-classes"
        + " -Dreference.update=true";

    private ConfigurationReference() {
    }

    /**
     * @param committed the reference page as it is in the repository
     * @param groups    the settings
     * @return the page with everything below {@link #GENERATED_MARKER} replaced by the tables of {@code groups}
     * @throws IllegalArgumentException when the page has no marker line
     */
    static String page(String committed, List<Group> groups) {
        int marker = committed.indexOf(GENERATED_MARKER);
        if (marker < 0) {
            throw new IllegalArgumentException("the reference page has no line \"" + GENERATED_MARKER + "\"");
        }
        return committed.substring(0, marker) + GENERATED_MARKER + "\n\n" + tables(groups);
    }

    /**
     * @param args the output directory
     * @throws IOException when the metadata cannot be read or the output written
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: ConfigurationReference <output directory> <reference page>");
        }
        List<Group> groups = read(ConfigurationReference.class.getClassLoader());
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        Files.writeString(out.resolve("configuration-properties.adoc"), tables(groups), StandardCharsets.UTF_8);
        Files.writeString(out.resolve("configuration-defaults.adoc"), defaults(groups), StandardCharsets.UTF_8);
        Path reference = Path.of(args[1]);
        String committed = Files.readString(reference, StandardCharsets.UTF_8);
        String current = page(committed, groups);
        if (Boolean.getBoolean("reference.update") && !current.equals(committed)) {
            Files.writeString(reference, current, StandardCharsets.UTF_8);
            System.out.println("configuration reference: rewrote " + reference);
        }
        System.out.printf("configuration reference: %d groups, %d properties -> %s%n", groups.size(),
            groups.stream().mapToInt(g -> g.properties().size()).sum(), out);
    }

    /** Every group of every metadata file the class loader sees, in reference order. */
    static List<Group> read(ClassLoader loader) throws IOException {
        ObjectMapper json = new ObjectMapper();
        Map<String, Group> groups = new TreeMap<>();
        for (URL url : Collections.list(loader.getResources(METADATA))) {
            JsonNode root;
            try (InputStream in = url.openStream()) {
                root = json.readTree(in);
            }
            Map<String, String> groupDescriptions = new TreeMap<>();
            Map<String, String> groupTypes = new TreeMap<>();
            for (JsonNode g : root.path("groups")) {
                groupDescriptions.put(g.path("name").asText(), g.path("description").asText(""));
                groupTypes.put(g.path("type").asText(), g.path("name").asText());
            }
            for (JsonNode p : root.path("properties")) {
                String sourceType = p.path("sourceType").asText();
                if (!sourceType.startsWith(OWN_PACKAGE)) {
                    continue;
                }
                String groupName = groupTypes.get(sourceType);
                if (groupName == null) {
                    throw new IllegalStateException(url + ": property " + p.path("name").asText()
                        + " belongs to no group (source type " + sourceType + ")");
                }
                Class<?> source = load(loader, sourceType);
                Group group = groups.computeIfAbsent(groupName, n -> new Group(
                    display(n), asciidoc(resolveValues(groupDescriptions.get(n), source, loader)), new ArrayList<>()));
                group.properties().add(property(p, source, loader));
            }
        }
        if (groups.isEmpty()) {
            throw new IllegalStateException("no " + METADATA + " of " + OWN_PACKAGE + "* on the class path");
        }
        List<Group> ordered = new ArrayList<>(groups.size());
        Comparator<String> byOrder = Comparator.comparingInt(n -> {
            int i = GROUP_ORDER.indexOf(n);
            return i < 0 ? GROUP_ORDER.size() : i;
        });
        groups.keySet().stream().sorted(byOrder.thenComparing(Comparator.naturalOrder()))
            .forEach(n -> ordered.add(groups.get(n)));
        return ordered;
    }

    private static Property property(JsonNode p, Class<?> source, ClassLoader loader) {
        String name = p.path("name").asText();
        String text = resolveValues(p.path("description").asText(""), source, loader);
        if (text.isBlank()) {
            throw new IllegalStateException(name + " has no description: document its setter in " + source.getName());
        }
        Matcher d = DEFAULT.matcher(text);
        if (!d.find()) {
            throw new IllegalStateException(name + ": its description names no default (\"Default ...\"): "
                + "document it in " + source.getName());
        }
        String defaultValue = plain(d.group(1)).trim();
        return new Property(display(name), type(p.path("type").asText(), loader), defaultValue,
            asciidoc(withoutDefault(text, d)));
    }

    /**
     * The description without the sentence that only states the default, which the Default
     * column shows: "Default 1m." goes; "Default: none, meaning ..." stays, it says more.
     */
    static String withoutDefault(String text, Matcher d) {
        int end = d.end();
        boolean wholeSentence = end == text.length()
            || text.charAt(end) == '.' && (end + 1 == text.length() || Character.isWhitespace(text.charAt(end + 1)));
        boolean startsSentence = d.start() == 0 || text.substring(0, d.start()).stripTrailing().endsWith(".");
        if (!wholeSentence || !startsSentence) {
            return text;
        }
        String rest = (text.substring(0, d.start()) + text.substring(Math.min(text.length(), end + 1))).strip()
            .replaceAll("\\s{2,}", " ");
        return rest.isEmpty() ? text : rest;
    }

    /** {@code idempotency.client.*.x} is written {@code idempotency.client.<name>.x}. */
    private static String display(String name) {
        return name.replace(".*", ".<name>");
    }

    private static String type(String type, ClassLoader loader) {
        switch (type) {
            case "boolean", "java.lang.Boolean":
                return "boolean";
            case "int", "java.lang.Integer", "long", "java.lang.Long":
                return "integer";
            case "double", "java.lang.Double":
                return "number";
            case "java.lang.String":
                return "string";
            case "java.net.URI":
                return "URI";
            case "java.time.Duration":
                return "duration";
            case "java.util.Collection", "java.util.List", "java.util.Set":
                return "list";
            default:
                Class<?> c = load(loader, type);
                if (c.isEnum()) {
                    return Arrays.stream(c.getEnumConstants()).map(Object::toString)
                        .collect(Collectors.joining(" or "));
                }
                return c.getSimpleName();
        }
    }

    /** Replaces {@code {@value #FIELD}} and {@code {@value a.b.C#FIELD}} by the constant's value. */
    static String resolveValues(String javadoc, Class<?> source, ClassLoader loader) {
        String text = javadoc.replaceAll("\\s*\\n\\s*", " ").trim();
        Matcher m = VALUE.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            Class<?> owner = m.group(1).isEmpty() ? source : load(loader, m.group(1));
            m.appendReplacement(out, Matcher.quoteReplacement(constant(owner, m.group(2))));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String constant(Class<?> owner, String field) {
        try {
            Field f = field(owner, field);
            f.setAccessible(true);
            Object value = f.get(null);
            return String.valueOf(value);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("{@value " + owner.getName() + "#" + field + "} cannot be resolved", e);
        }
    }

    /** The field as javadoc finds it: declared here, in a superclass, or in an interface (constants). */
    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        for (Class<?> c = owner; c != null; c = c.getSuperclass()) {
            try {
                return c.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        return owner.getField(name); // public, inherited from an interface
    }

    /** Javadoc inline tags to plain text, for the default column's value. */
    private static String plain(String javadoc) {
        String s = CODE.matcher(javadoc).replaceAll(r -> Matcher.quoteReplacement(r.group(1)));
        return LINK.matcher(s).replaceAll(r -> Matcher.quoteReplacement(
            r.group(2) != null ? r.group(2) : simpleName(r.group(1))));
    }

    /** Javadoc inline tags to AsciiDoc, with what would break a table cell escaped. */
    static String asciidoc(String javadoc) {
        String s = javadoc.replace("|", "\\|");
        s = CODE.matcher(s).replaceAll(r -> Matcher.quoteReplacement("`+" + r.group(1) + "+`"));
        s = LINK.matcher(s).replaceAll(r -> Matcher.quoteReplacement(
            r.group(2) != null ? r.group(2) : "`" + simpleName(r.group(1)) + "`"));
        return s;
    }

    private static String simpleName(String reference) {
        String type = reference.contains("#") ? reference.substring(0, reference.indexOf('#')) : reference;
        String member = reference.contains("#") ? reference.substring(reference.indexOf('#') + 1) : "";
        String simple = type.substring(type.lastIndexOf('.') + 1);
        return member.isEmpty() ? simple : simple.isEmpty() ? member : simple + "#" + member;
    }

    private static Class<?> load(ClassLoader loader, String name) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the metadata names " + name + ", which is not on the class path", e);
        }
    }

    static String tables(List<Group> groups) {
        StringBuilder out = new StringBuilder();
        out.append("// Generated by dev.idempotency.docs.ConfigurationReference from ").append(METADATA)
            .append(". Do not edit.\n\n");
        for (Group g : groups) {
            out.append("[[").append(anchor(g.name())).append("]]\n");
            out.append("=== `").append(g.name()).append(".*`\n\n");
            out.append(g.description()).append("\n\n");
            out.append("[cols=\"3,1,2,6\",options=\"header\"]\n|===\n| Property | Type | Default | Description\n");
            for (Property p : g.properties()) {
                out.append("\n| [[").append(anchor(p.name())).append("]]`").append(p.name()).append("`\n| ")
                    .append(p.type()).append("\n| `+").append(p.defaultValue()).append("+`\n| ")
                    .append(p.description()).append('\n');
            }
            out.append("|===\n\n");
        }
        return out.toString();
    }

    static String defaults(List<Group> groups) {
        StringBuilder out = new StringBuilder();
        out.append("// Generated by dev.idempotency.docs.ConfigurationReference. Do not edit.\n");
        for (Group g : groups) {
            for (Property p : g.properties()) {
                out.append(':').append("default-").append(anchor(p.name())).append(": ")
                    .append(p.defaultValue()).append('\n');
            }
        }
        return out.toString();
    }

    /** {@code idempotency.client.<name>.max-attempts} becomes {@code idempotency-client-name-max-attempts}. */
    static String anchor(String name) {
        return name.replaceAll("[^A-Za-z0-9]+", "-").replaceAll("^-|-$", "");
    }
}
