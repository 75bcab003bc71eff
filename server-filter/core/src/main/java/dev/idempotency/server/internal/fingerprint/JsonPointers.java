package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Members and array elements left out of the canonical form, compiled from JSON Pointers
 * (RFC 6901) into a tree of pointer tokens. Immutable.
 */
@Internal
public final class JsonPointers {
        public static final JsonPointers NONE = new JsonPointers(null, false);

        /** Children by token; {@code null} for none. */
        final Node root;
        /** The empty pointer: the whole document is ignored. */
        final boolean whole;

        private JsonPointers(Node root, boolean whole) {
            this.root = root;
            this.whole = whole;
        }

        /**
         * @param pointers JSON Pointers; ones that are not pointers (no leading {@code /}) are
         *                 ignored here, configuration validation reports them
         */
        public static JsonPointers compile(Collection<String> pointers) {
            if (pointers.isEmpty()) {
                return NONE;
            }
            Node root = new Node();
            boolean whole = false;
            for (String pointer : pointers) {
                if (pointer.isEmpty()) {
                    whole = true;
                    continue;
                }
                if (pointer.charAt(0) != '/') {
                    continue;
                }
                Node node = root;
                for (String raw : pointer.substring(1).split("/", -1)) {
                    node = node.child(raw.replace("~1", "/").replace("~0", "~"), true);
                }
                node.removed = true;
            }
            root.freeze();
            return new JsonPointers(root, whole);
        }

    /** A pointer token's node: removed here, or a path to removed members below. */
    static final class Node {
        private Map<String, Node> children = new HashMap<>();
        /** Children whose token is an array index, by index. */
        private Node[] byIndex = new Node[0];
        boolean removed;

        Node child(String token, boolean create) {
            Node n = children.get(token);
            if (n == null && create) {
                n = new Node();
                children.put(token, n);
            }
            return n;
        }

        Node child(int index) {
            return index < byIndex.length ? byIndex[index] : null;
        }

        void freeze() {
            List<Node> indexed = new ArrayList<>();
            children.forEach((token, node) -> {
                int i = arrayIndex(token);
                if (i >= 0) {
                    while (indexed.size() <= i) {
                        indexed.add(null);
                    }
                    indexed.set(i, node);
                }
                node.freeze();
            });
            byIndex = indexed.toArray(new Node[0]);
            children = Map.copyOf(children);
        }
    }

    /** @return the index a pointer token denotes in an array, or -1 when it is not an index */
    static int arrayIndex(String token) {
        if (token.isEmpty() || token.length() > 9 || (token.length() > 1 && token.charAt(0) == '0')) {
            return -1;
        }
        for (int i = 0; i < token.length(); i++) {
            if (token.charAt(i) < '0' || token.charAt(i) > '9') {
                return -1;
            }
        }
        return Integer.parseInt(token);
    }
}
