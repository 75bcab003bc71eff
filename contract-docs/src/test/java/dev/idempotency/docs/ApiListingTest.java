package dev.idempotency.docs;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.signature.SignatureReader;
import org.objectweb.asm.tree.AnnotationNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FieldNode;
import org.objectweb.asm.tree.InnerClassNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.util.TraceSignatureVisitor;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The public API is a reviewed artifact: each published module's public, non-{@code @Internal}
 * types and their public and protected members, read from its compiled classes, must equal the
 * module's {@code public-api.txt}, so every API change shows up in a diff of that file. After an
 * intended change, rewrite the files with {@code mvn -pl contract-docs test -Dtest=ApiListingTest
 * -Dapi.update=true} (the modules compiled first) and review the diff.
 */
class ApiListingTest {

    private static final Path ROOT = Path.of("..");
    private static final String INTERNAL = "Lio/micronaut/core/annotation/Internal;";

    @ParameterizedTest(name = "the API of {0} is its public-api.txt")
    @ValueSource(strings = {"operation-context", "server-filter/core", "server-filter/redis", "server-filter/postgres",
        "server-filter/messaging", "server-filter/rabbitmq", "server-filter/kafka", "server-filter/openapi", "client-sdk"})
    @DisplayName("Each published module's API equals the listing in the repository")
    void listingIsCurrent(String module) throws IOException {
        Path classes = ROOT.resolve(module).resolve("target/classes");
        assertThat(classes).as("compiled classes of %s (build the module first)", module).isDirectory();
        String actual = String.join("\n", listing(classes)) + "\n";
        Path file = ROOT.resolve(module).resolve("public-api.txt");
        if (Boolean.getBoolean("api.update")) {
            Files.writeString(file, actual, StandardCharsets.UTF_8);
        }
        assertThat(file).as("%s (create it with -Dapi.update=true)", file).exists();
        assertThat(Files.readString(file, StandardCharsets.UTF_8))
            .as("%s differs from the module's API: review the change, then rewrite the file with"
                + " -Dapi.update=true", file)
            .isEqualTo(actual);
    }

    private static List<String> listing(Path classes) throws IOException {
        List<ClassNode> nodes = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                ClassNode node = new ClassNode();
                try (InputStream in = Files.newInputStream(f)) {
                    new ClassReader(in).accept(node, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG);
                }
                nodes.add(node);
            }
        }
        List<String> lines = new ArrayList<>();
        nodes.stream().filter(ApiListingTest::isApi).sorted((a, b) -> a.name.compareTo(b.name)).forEach(node -> {
            lines.add(typeLine(node));
            Set<String> members = new TreeSet<>();
            for (FieldNode f : node.fields) {
                if (visible(f.access) && !internal(f.visibleAnnotations, f.invisibleAnnotations)) {
                    members.add("  " + modifiers(f.access) + type(f.signature, f.desc) + " " + f.name);
                }
            }
            for (MethodNode m : node.methods) {
                if (visible(m.access) && (m.access & (Opcodes.ACC_SYNTHETIC | Opcodes.ACC_BRIDGE)) == 0
                    && !m.name.equals("<clinit>") && !internal(m.visibleAnnotations, m.invisibleAnnotations)) {
                    members.add("  " + modifiers(m.access & ~Opcodes.ACC_VARARGS) + method(node, m));
                }
            }
            lines.addAll(members);
        });
        return lines;
    }

    private static boolean isApi(ClassNode node) {
        if (node.name.contains("/internal/") || node.name.endsWith("package-info")
            || node.name.substring(node.name.lastIndexOf('/') + 1).startsWith("$") // Micronaut's generated bean definitions
            || internal(node.visibleAnnotations, node.invisibleAnnotations)) {
            return false;
        }
        int access = node.access;
        for (InnerClassNode inner : node.innerClasses) {
            if (inner.name.equals(node.name)) {
                if (inner.innerName == null) {
                    return false; // anonymous or local
                }
                access = inner.access;
            }
        }
        return (access & Opcodes.ACC_PUBLIC) != 0 && (node.access & Opcodes.ACC_SYNTHETIC) == 0
            && enclosingIsApi(node);
    }

    /** A nested type is API only when the types around it are public too (checked by name). */
    private static boolean enclosingIsApi(ClassNode node) {
        for (InnerClassNode inner : node.innerClasses) {
            if (node.name.startsWith(inner.name + "$") && (inner.access & Opcodes.ACC_PUBLIC) == 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean internal(List<AnnotationNode> visible, List<AnnotationNode> invisible) {
        return Stream.of(visible, invisible).filter(l -> l != null).flatMap(List::stream)
            .anyMatch(a -> INTERNAL.equals(a.desc));
    }

    private static boolean visible(int access) {
        return (access & (Opcodes.ACC_PUBLIC | Opcodes.ACC_PROTECTED)) != 0 && (access & Opcodes.ACC_SYNTHETIC) == 0;
    }

    private static String typeLine(ClassNode node) {
        String kind = (node.access & Opcodes.ACC_ANNOTATION) != 0 ? "@interface"
            : (node.access & Opcodes.ACC_ENUM) != 0 ? "enum"
            : (node.access & Opcodes.ACC_RECORD) != 0 || "java/lang/Record".equals(node.superName) ? "record"
            : (node.access & Opcodes.ACC_INTERFACE) != 0 ? "interface" : "class";
        int access = node.access;
        for (InnerClassNode inner : node.innerClasses) {
            if (inner.name.equals(node.name)) {
                access = inner.access;
            }
        }
        String mods = kind.equals("class") ? modifiers(access & ~Opcodes.ACC_SUPER)
            : modifiers(access & (Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC));
        StringBuilder line = new StringBuilder(mods + kind + " " + node.name.replace('/', '.'));
        if (node.signature != null) {
            TraceSignatureVisitor v = new TraceSignatureVisitor(node.access);
            new SignatureReader(node.signature).accept(v);
            line.append(v.getDeclaration());
        } else {
            if (node.superName != null && kind.equals("class") && !node.superName.equals("java/lang/Object")) {
                line.append(" extends ").append(node.superName.replace('/', '.'));
            }
            List<String> interfaces = node.interfaces.stream()
                .filter(i -> !i.equals("java/lang/annotation/Annotation"))
                .map(i -> i.replace('/', '.')).toList();
            if (!interfaces.isEmpty()) {
                line.append(kind.equals("interface") ? " extends " : " implements ").append(String.join(", ", interfaces));
            }
        }
        return line.toString();
    }

    private static String modifiers(int access) {
        List<String> mods = new ArrayList<>();
        if ((access & Opcodes.ACC_PUBLIC) != 0) {
            mods.add("public");
        }
        if ((access & Opcodes.ACC_PROTECTED) != 0) {
            mods.add("protected");
        }
        if ((access & Opcodes.ACC_STATIC) != 0) {
            mods.add("static");
        }
        if ((access & Opcodes.ACC_FINAL) != 0) {
            mods.add("final");
        }
        if ((access & Opcodes.ACC_ABSTRACT) != 0) {
            mods.add("abstract");
        }
        return mods.isEmpty() ? "" : String.join(" ", mods) + " ";
    }

    private static String type(String signature, String desc) {
        if (signature != null) {
            TraceSignatureVisitor v = new TraceSignatureVisitor(0);
            new SignatureReader(signature).acceptType(v);
            return v.getDeclaration();
        }
        return Type.getType(desc).getClassName();
    }

    private static String method(ClassNode owner, MethodNode m) {
        String name = m.name.equals("<init>") ? owner.name.substring(owner.name.lastIndexOf('/') + 1) : m.name;
        String exceptions = m.exceptions.isEmpty() ? ""
            : " throws " + m.exceptions.stream().map(e -> e.replace('/', '.')).collect(Collectors.joining(", "));
        if (m.signature != null) {
            TraceSignatureVisitor v = new TraceSignatureVisitor(m.access);
            new SignatureReader(m.signature).accept(v);
            String declaration = v.getDeclaration(); // "<T>(params)" or "(params)"
            String typeParams = declaration.startsWith("<") ? declaration.substring(0, declaration.indexOf('(')) + " " : "";
            String params = declaration.substring(declaration.indexOf('('));
            String returns = m.name.equals("<init>") ? "" : v.getReturnType() + " ";
            return typeParams + returns + name + params + exceptions;
        }
        Type t = Type.getMethodType(m.desc);
        String params = Arrays.stream(t.getArgumentTypes()).map(Type::getClassName).collect(Collectors.joining(", "));
        String returns = m.name.equals("<init>") ? "" : t.getReturnType().getClassName() + " ";
        return returns + name + "(" + params + ")" + exceptions;
    }
}
