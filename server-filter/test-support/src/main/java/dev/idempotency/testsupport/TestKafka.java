package dev.idempotency.testsupport;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The Kafka the tests share (see ARCHITECTURE "Real services in tests"): the cluster at
 * {@code IDEMPOTENCY_TEST_KAFKA_BOOTSTRAP} when it is set and answers, otherwise an
 * {@link EmbeddedKafkaBroker} started for this JVM and stopped at its exit. Tests isolate
 * themselves by their topics' and groups' names.
 */
public final class TestKafka {

    public static final String ENV = "IDEMPOTENCY_TEST_KAFKA_BOOTSTRAP";

    private static String shared;

    private TestKafka() {
    }

    /** @return the bootstrap servers of the shared test cluster, starting an embedded broker when none answers */
    public static synchronized String bootstrapServers() {
        if (shared == null) {
            String configured = System.getenv(ENV);
            if (configured != null && !configured.isBlank() && answers(configured)) {
                shared = configured;
            } else {
                EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start();
                Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "test-kafka-stop"));
                shared = broker.bootstrapServers();
            }
        }
        return shared;
    }

    /** @return whether a Kafka cluster answers at {@code bootstrap} within a few seconds */
    public static boolean answers(String bootstrap) {
        if (!anyListens(bootstrap)) {
            return false; // no need for the admin client's retries (and their warnings) when nothing listens
        }
        try (Admin admin = admin(bootstrap)) {
            admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** Creates {@code topics} with {@code partitions} each (one replica), if they are not there. */
    public static void createTopics(String bootstrap, int partitions, String... topics) {
        try (Admin admin = admin(bootstrap)) {
            for (String topic : topics) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException("could not create topic " + topic + ": " + e.getCause(), e);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("Kafka at " + bootstrap + " did not create " + List.of(topics) + " in 30s", e);
        }
    }

    private static boolean anyListens(String bootstrap) {
        for (String address : bootstrap.split(",")) {
            String a = address.trim();
            int colon = a.lastIndexOf(':');
            try (java.net.Socket s = new java.net.Socket()) {
                s.connect(new java.net.InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))), 1000);
                return true;
            } catch (IOException | RuntimeException e) {
                // the next one
            }
        }
        return false;
    }

    private static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
            AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000));
    }
}
