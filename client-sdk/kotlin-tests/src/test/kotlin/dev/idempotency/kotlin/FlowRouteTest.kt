package dev.idempotency.kotlin

import dev.idempotency.client.IdempotentCall
import dev.idempotency.server.Idempotent
import dev.idempotency.server.IdempotentOperation
import io.micronaut.context.annotation.Requires
import io.micronaut.http.HttpRequest
import io.micronaut.http.annotation.Body
import io.micronaut.http.annotation.Controller
import io.micronaut.http.annotation.Header
import io.micronaut.http.annotation.Post
import io.micronaut.http.client.HttpClient
import io.micronaut.http.client.annotation.Client
import io.micronaut.test.extensions.junit5.annotation.MicronautTest
import io.micronaut.test.support.TestPropertyProvider
import dev.idempotency.testsupport.Stores
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.TestInstance
import jakarta.inject.Inject
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.future.await
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.DisplayName
import org.junit.jupiter.api.Test
import java.util.UUID
import java.util.concurrent.CompletableFuture
import java.util.concurrent.atomic.AtomicInteger

@Requires(property = "spec.name", value = "FlowRouteTest")
@Client("/kt-flow")
@IdempotentCall
interface Downstream {
    @Post("/echo")
    suspend fun echo(@Body body: Map<String, Int>): Map<String, String?>
}

// tag::flow-route[]
/** A route that returns a Flow and, after a suspension, calls downstream and runs a durable step. */
@Requires(property = "spec.name", value = "FlowRouteTest")
@Controller("/kt-flow")
class FlowRoutes(private val downstream: Downstream) {
    val stepRuns = AtomicInteger()

    @Post("/capture")
    @Idempotent
    fun capture(@Body body: Map<String, Int>): Flow<Map<String, Any?>> = flow {
        delay(5) // the flow goes on on another thread
        val operation = IdempotentOperation.current()
        val sent = downstream.echo(mapOf("amount" to (body["amount"] ?: 0)))
        val charged = operation.orElseThrow().stepAsync("charge", String::class.java) {
            CompletableFuture.completedFuture("charged-" + stepRuns.incrementAndGet())
        }.await()
        emit(mapOf("inScope" to operation.isPresent, "downstreamKey" to sent["key"], "step" to charged))
    }
    // end::flow-route[]

    /** A blocking step on the event loop, where a suspend route starts: refused, with the Kotlin remedy. */
    @Post("/blocking-step")
    @Idempotent
    suspend fun blockingStep(@Body body: Map<String, Int>): Map<String, String?> = try {
        IdempotentOperation.required().step("reserve", String::class.java) { "reserved" }
        mapOf("error" to null)
    } catch (e: IllegalStateException) {
        mapOf("error" to e.message)
    }

    @Post("/echo")
    fun echo(@Header("Idempotency-Key") key: String?, @Body body: Map<String, Int>): Map<String, String?> =
        mapOf("key" to key)
}

/**
 * CONTRACT S23, C11 from Kotlin: a route that returns a Flow keeps its operation across the flow's
 * suspensions, so a client call after one sends a key derived from the operation, and a durable
 * step records and resumes, as in a suspend route.
 */
abstract class FlowRouteTest : TestPropertyProvider {

    /** @return the store's properties */
    abstract fun store(): Map<String, Any>

    @AfterAll
    fun removeStoreData() = Stores.removeCreated()

    override fun getProperties(): Map<String, String> =
        (store() + mapOf("spec.name" to "FlowRouteTest")).mapValues { it.value.toString() }

    @Inject
    @field:Client("/")
    lateinit var http: HttpClient

    @Test
    @DisplayName("C11/S23: in a Flow route, after a suspension, the operation is in scope: a derived key and a step")
    fun flowRouteKeepsTheOperation() {
        val key = "\"" + UUID.randomUUID() + "\""
        val response = http.toBlocking().retrieve(HttpRequest.POST("/kt-flow/capture", mapOf("amount" to 500))
            .header("Idempotency-Key", key), String::class.java)

        assertThat(response).contains("\"inScope\":true")
        assertThat(response).contains("derived-v1-")
        assertThat(response).contains("\"step\":\"charged-")
    }

    @Test
    @DisplayName("S23: a blocking step on the event loop of a suspend route is refused with the Kotlin remedy")
    fun blockingStepInASuspendRouteSaysWhatToDo() {
        val response = http.toBlocking().retrieve(HttpRequest.POST("/kt-flow/blocking-step", mapOf("n" to 1))
            .header("Idempotency-Key", "\"" + UUID.randomUUID() + "\""), String::class.java)

        assertThat(response).contains("withContext(Dispatchers.IO)").contains("stepAsync(...).await()")
    }
}

@MicronautTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FlowRouteInMemoryTest : FlowRouteTest() {
    override fun store(): Map<String, Any> = Stores.MEMORY.properties()
}

@MicronautTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FlowRouteOnRedisTest : FlowRouteTest() {
    override fun store(): Map<String, Any> = Stores.REDIS.properties()
}
