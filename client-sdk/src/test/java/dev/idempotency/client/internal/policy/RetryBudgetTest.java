package dev.idempotency.client.internal.policy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class RetryBudgetTest {

    @Test
    @DisplayName("C7: each retry spends a token; an empty budget refuses; successes refill a fraction")
    void exhaustAndRefill() {
        RetryBudget budget = new RetryBudget(3, 0.5);
        assertThat(budget.tryAcquire()).isTrue();
        assertThat(budget.tryAcquire()).isTrue();
        assertThat(budget.tryAcquire()).isTrue();
        assertThat(budget.tryAcquire()).isFalse();
        budget.onSuccess();
        assertThat(budget.tryAcquire()).isFalse(); // 0.5 token: not a whole retry
        budget.onSuccess();
        assertThat(budget.tryAcquire()).isTrue();
        for (int i = 0; i < 100; i++) {
            budget.onSuccess();
        }
        assertThat(budget.tokens()).isEqualTo(3.0); // never above capacity
    }

    @Test
    @DisplayName("C7: the budget is shared per scheme://host:port")
    void perTarget() {
        assertThat(RetryBudget.target(URI.create("http://Api.Example.com/payments"), "c")).isEqualTo("http://api.example.com:80");
        assertThat(RetryBudget.target(URI.create("https://api.example.com:8443/x?y"), "c")).isEqualTo("https://api.example.com:8443");
        assertThat(RetryBudget.target(URI.create("/payments"), "payments")).isEqualTo("client:payments");
        RetryBudget.Registry registry = new RetryBudget.Registry(1, 0.1);
        assertThat(registry.forTarget("http://a:80")).isSameAs(registry.forTarget("http://a:80"));
        assertThat(registry.forTarget("http://a:80")).isNotSameAs(registry.forTarget("http://b:80"));
    }

    @Test
    @DisplayName("C7: thread-safe: N threads racing never spend more tokens than there are")
    void threadSafe() throws InterruptedException {
        RetryBudget budget = new RetryBudget(100, 0.1);
        AtomicInteger granted = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        for (int i = 0; i < 1000; i++) {
            pool.execute(() -> {
                if (budget.tryAcquire()) {
                    granted.incrementAndGet();
                }
            });
        }
        pool.shutdown();
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        assertThat(granted).hasValue(100);
    }
}
