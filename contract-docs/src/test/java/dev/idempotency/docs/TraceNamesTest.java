package dev.idempotency.docs;

import dev.idempotency.context.TraceNames;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT O4: the names written into traces are a published interface, declared once
 * ({@link TraceNames}) and each described in the operations guide's "Tracing" section; no name
 * the guide gives there is missing from the declaration.
 */
class TraceNamesTest {

    private static final Pattern NAME = Pattern.compile("`(idempotency\\.[a-z_.]+[a-z_])`");

    @Test
    @DisplayName("O4: every name in TraceNames is in the operations guide's Tracing section, and every idempotency.*"
        + " name the section gives is in TraceNames")
    void declaredAndDocumented() throws IOException, IllegalAccessException {
        String guide = Files.readString(Path.of("src/docs/asciidoc/guides/operations.adoc"));
        int start = guide.indexOf("[[tracing]]");
        assertThat(start).as("the guide has a Tracing section").isPositive();
        int end = guide.indexOf("\n[[", start + 1);
        String section = guide.substring(start, end < 0 ? guide.length() : end);

        Set<String> declared = new TreeSet<>();
        for (Field f : TraceNames.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
                declared.add((String) f.get(null));
            }
        }
        List<String> undocumented = new ArrayList<>();
        for (String name : declared) {
            if (name.endsWith(".")) {
                continue; // the store-call prefix: its spans are named in full below
            }
            if (!section.contains("`" + name + "`") && !section.contains("`" + name + "=") && !section.contains("=" + name + "`")) {
                undocumented.add(name);
            }
        }
        for (String call : List.of("acquire", "complete", "release")) {
            assertThat(section).contains("`" + TraceNames.STORE_CALL_PREFIX + call + "`");
        }
        assertThat(undocumented).as("names traced but not described in the guide").isEmpty();

        Set<String> documented = new TreeSet<>();
        Matcher m = NAME.matcher(section);
        while (m.find()) {
            documented.add(m.group(1));
        }
        documented.removeIf(n -> n.matches("idempotency\\.(acquire|complete|release)")); // the store-call prefix's
        documented.removeAll(declared);
        assertThat(documented).as("names the guide gives that nothing declares").isEmpty();
    }
}
