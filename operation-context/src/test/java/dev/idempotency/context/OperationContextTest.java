package dev.idempotency.context;

import io.micronaut.core.propagation.PropagatedContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** CONTRACT C11 and M2: one derivation for downstream keys and message ids. */
class OperationContextTest {

    private static final String RECORD = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    @Test
    @DisplayName("M2: message ids are those the server derived before C11 (pinned values)")
    void messageIdsUnchanged() {
        // computed by IdempotentOperation.messageId as it was before the derivation moved here
        assertThat(OperationContext.messageId(RECORD, "payment.captured")).isEqualTo("0db1db44-2f65-858a-9c4e-252796640bc0");
        assertThat(OperationContext.start(RECORD).derivedKey("charge-card"))
            .isEqualTo("derived-v1-b3d5365c-9b26-8bff-a05a-4540f3b9f6df");
    }

    @Test
    @DisplayName("C11: a derived key is stable, differs per step, operation and purpose, and is a valid key of the reserved form")
    void derivedKeys() {
        OperationContext a = OperationContext.start(RECORD);
        assertThat(a.derivedKey("charge")).isEqualTo(OperationContext.start(RECORD).derivedKey("charge"));
        Set<String> values = new HashSet<>();
        values.add(a.derivedKey("charge"));
        values.add(a.derivedKey("refund"));
        values.add(OperationContext.start(RECORD.replace('0', 'f')).derivedKey("charge"));
        values.add(OperationContext.DERIVED_KEY_PREFIX + a.messageId("charge"));
        assertThat(values).hasSize(4);
        String key = a.derivedKey("charge");
        assertThat(OperationContext.isDerived(key)).isTrue();
        assertThat(OperationContext.isDerived(UUID.randomUUID().toString())).isFalse();
        assertThat(key).hasSize(47).matches("[a-z0-9-]+");
        assertThat(UUID.fromString(key.substring(OperationContext.DERIVED_KEY_PREFIX.length())).version()).isEqualTo(8);
    }

    @Test
    @DisplayName("C11: default step names count calls per method and template, afresh in each execution")
    void defaultSteps() {
        OperationContext first = OperationContext.start(RECORD);
        assertThat(first.defaultStep("POST", "/charges")).isEqualTo("POST /charges#1");
        assertThat(first.defaultStep("POST", "/refunds")).isEqualTo("POST /refunds#1");
        assertThat(first.defaultStep("POST", "/charges")).isEqualTo("POST /charges#2");
        assertThat(OperationContext.start(RECORD).defaultStep("POST", "/charges")).isEqualTo("POST /charges#1");
    }

    @Test
    @DisplayName("C11: the context is found where Micronaut propagates it, and nowhere else")
    void propagation() throws Exception {
        assertThat(OperationContext.current()).isEmpty();
        OperationContext context = OperationContext.start(RECORD);
        try (PropagatedContext.Scope ignored = PropagatedContext.getOrEmpty().plus(context).propagate()) {
            assertThat(OperationContext.current()).containsSame(context);
            PropagatedContext captured = PropagatedContext.get();
            assertThat(CompletableFuture.supplyAsync(() -> {
                try (PropagatedContext.Scope s = captured.propagate()) {
                    return OperationContext.current().orElse(null);
                }
            }).get()).isSameAs(context);
        }
        assertThat(OperationContext.current()).isEmpty();
    }

    @Test
    @DisplayName("C11: blank or overlong steps and blank operation ids are refused with what to do")
    void badInput() {
        OperationContext context = OperationContext.start(RECORD);
        assertThatThrownBy(() -> context.derivedKey(" ")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("a step needs a name");
        assertThatThrownBy(() -> context.messageId(null)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("was null");
        assertThatThrownBy(() -> context.derivedKey("x".repeat(201))).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("shorten it");
        assertThatThrownBy(() -> OperationContext.start("")).isInstanceOf(IllegalArgumentException.class);
    }
}
