package dev.idempotency.kotlin

import dev.idempotency.client.IdempotencyKey
import dev.idempotency.client.IdempotencyKeyReusedException
import dev.idempotency.client.IdempotentCall
import dev.idempotency.server.Idempotent
import io.micronaut.context.annotation.Requires
import io.micronaut.http.HttpResponse
import io.micronaut.http.HttpStatus
import io.micronaut.http.annotation.Body
import io.micronaut.http.annotation.Controller
import io.micronaut.http.annotation.Header
import io.micronaut.http.annotation.Post
import io.micronaut.http.client.annotation.Client
import io.micronaut.serde.annotation.Serdeable
import io.micronaut.test.extensions.junit5.annotation.MicronautTest
import io.micronaut.test.support.TestPropertyProvider
import dev.idempotency.testsupport.Stores
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.TestInstance
import jakarta.inject.Inject
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.single
import kotlinx.coroutines.runBlocking
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatThrownBy
import org.junit.jupiter.api.DisplayName
import org.junit.jupiter.api.Test
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

@Serdeable
data class NewOrder(val item: String, val quantity: Int)

@Serdeable
data class Order(val id: String, val item: String, val quantity: Int)

/** An orders API whose first attempt of each key answers 503: a caller that does not retry never gets its order. */
@Requires(property = "spec.name", value = "SuspendClientTest")
@Controller("/kt")
class OrdersApi {
    val attempts = ConcurrentHashMap<String, AtomicInteger>()
    val runs = AtomicInteger()

    @Post("/orders")
    @Idempotent
    fun place(@Body order: NewOrder, @Header("Idempotency-Key") key: String): HttpResponse<Order> {
        if (attempts.computeIfAbsent(key) { AtomicInteger() }.incrementAndGet() == 1) {
            return HttpResponse.status(HttpStatus.SERVICE_UNAVAILABLE)
        }
        return HttpResponse.created(Order("ord_" + runs.incrementAndGet(), order.item, order.quantity))
    }
}

// tag::client[]
@Requires(property = "spec.name", value = "SuspendClientTest")
@Client("/kt")
@IdempotentCall
interface OrdersClient {

    @Post("/orders")
    suspend fun place(@Body order: NewOrder): Order

    @Post("/orders")
    suspend fun place(@Body order: NewOrder, @IdempotencyKey key: String): Order

    @Post("/orders")
    fun placeAsFlow(@Body order: NewOrder): Flow<Order>
}
// end::client[]

/**
 * CONTRACT C1, C3, C8, C9 from Kotlin: a declarative client's suspend method is one operation, one
 * key, retried with that key like a blocking or CompletableFuture method; a 422 raises the SDK's
 * typed exception; a method returning Flow sends its request and yields the body.
 */
abstract class SuspendClientTest : TestPropertyProvider {

    /** @return the store's properties */
    abstract fun store(): Map<String, Any>

    @AfterAll
    fun removeStoreData() = Stores.removeCreated()

    override fun getProperties(): Map<String, String> = (store() + mapOf(
        "spec.name" to "SuspendClientTest",
        "idempotency.client.default.max-attempts" to "4",
        "idempotency.client.default.base-delay" to "10ms")).mapValues { it.value.toString() }

    @Inject
    lateinit var client: OrdersClient

    @Inject
    lateinit var api: OrdersApi

    @Test
    @DisplayName("C3/C8: a suspend method against a route that answers 503 once succeeds on the second attempt, same key")
    fun suspendRetriesWithTheSameKey(): Unit = runBlocking {
        val before = api.runs.get()
        val order = client.place(NewOrder("book", 2))

        assertThat(order.item).isEqualTo("book")
        assertThat(api.runs.get()).isEqualTo(before + 1)
        val retried = api.attempts.filterValues { it.get() == 2 }
        assertThat(retried).`as`("one key, sent twice: the 503, then the run").isNotEmpty
    }

    @Test
    @DisplayName("C9: a key reused with another payload raises IdempotencyKeyReusedException from a suspend method")
    fun suspendReused(): Unit = runBlocking {
        val key = UUID.randomUUID().toString()
        client.place(NewOrder("pen", 1), key)

        assertThatThrownBy { runBlocking { client.place(NewOrder("pen", 5), key) } }
            .isInstanceOf(IdempotencyKeyReusedException::class.java)
    }

    @Test
    @DisplayName("C8: a method returning Flow sends its request, retries it like a Publisher, and yields the body")
    fun flowClient(): Unit = runBlocking {
        val before = api.runs.get()
        val order = client.placeAsFlow(NewOrder("lamp", 3)).single()

        assertThat(order.item).isEqualTo("lamp")
        assertThat(order.quantity).isEqualTo(3)
        assertThat(api.runs.get()).isEqualTo(before + 1)
    }
}

@MicronautTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SuspendClientInMemoryTest : SuspendClientTest() {
    override fun store(): Map<String, Any> = Stores.MEMORY.properties()
}

@MicronautTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SuspendClientOnRedisTest : SuspendClientTest() {
    override fun store(): Map<String, Any> = Stores.REDIS.properties()
}
