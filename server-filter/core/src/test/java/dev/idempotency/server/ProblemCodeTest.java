package dev.idempotency.server;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class ProblemCodeTest {

    @Test
    @DisplayName("S20: a problem type is the contract page plus # and the code, for every kind of contract URL")
    void typeIsContractPagePlusCode() {
        assertThat(ProblemCode.KEY_REUSED.type(IdempotencyConfigurationProperties.DEFAULT_CONTRACT_URL))
            .hasToString("https://idempotency.dev/contract/#idempotency-key-reused");
        assertThat(ProblemCode.KEY_MISSING.type(URI.create("https://api.example.com/docs/idempotency?v=2")))
            .hasToString("https://api.example.com/docs/idempotency?v=2#idempotency-key-missing");
        assertThat(ProblemCode.STORE_UNAVAILABLE.type(URI.create("urn:example:idempotency")))
            .hasToString("urn:example:idempotency#idempotency-store-unavailable");
    }

    @Test
    @DisplayName("S20: the codes and statuses of the contract")
    void codesAndStatuses() {
        assertThat(Arrays.stream(ProblemCode.values()).map(c -> c.code() + " " + c.status())).containsExactly(
            "idempotency-key-missing 400", "idempotency-key-invalid 400", "idempotency-key-reused 422",
            "idempotency-request-in-progress 409", "idempotency-body-too-large 413", "idempotency-body-unreadable 400",
            "idempotency-store-unavailable 503");
    }
}
