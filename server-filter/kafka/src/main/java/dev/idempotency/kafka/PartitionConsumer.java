package dev.idempotency.kafka;

import dev.idempotency.messaging.DeliveryOutcome;
import dev.idempotency.messaging.Disposition;
import dev.idempotency.messaging.IdempotentConsumer;
import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.messaging.TransactionalMessageHandler;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * One Kafka consumer of a configured consumer, on a thread of its own (the only thread that
 * touches the Kafka client). Per partition it processes one record at a time, in offset order,
 * through the {@link IdempotentConsumer}; partitions run in parallel. A partition's next record
 * starts as soon as the one before is settled: while records run, the loop waits for one to finish
 * rather than in a poll.
 * <ul>
 *   <li><b>Commit.</b> A partition's offset is committed only past records whose outcome is
 *       stored (processed, a duplicate, or dead-lettered and the dead letter acknowledged).</li>
 *   <li><b>Wait, never skip.</b> A record that must wait (its handler failed, its id is in
 *       progress elsewhere, the store did not answer, its dead letter was not acknowledged) stays
 *       at the head of its partition, which is paused until the record's time comes.</li>
 *   <li><b>Rebalance.</b> For a partition it loses, it waits (up to {@code revoke-timeout}) for the
 *       record in flight, commits, and drops the records it held; a record still running is not
 *       committed, and its next owner finds its id in progress and then processed. A partition
 *       lost without a revocation (the group moved on) is dropped without a commit.</li>
 * </ul>
 */
final class PartitionConsumer implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionConsumer.class);
    private static final Duration POLL = Duration.ofMillis(20);
    private static final long COMMIT_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final KafkaConsumerConfiguration config;
    private final KafkaConsumer<byte[], byte[]> kafka;
    private final KafkaProducer<byte[], byte[]> deadLetters;
    private final IdempotentConsumer consumer;
    private final Object handler;
    private final Map<TopicPartition, Partition> partitions = new HashMap<>();
    private final ConcurrentLinkedQueue<Runnable> finished = new ConcurrentLinkedQueue<>();
    /** Released once per entry of {@link #finished}: the loop waits on it, not in a poll, while records run. */
    private final Semaphore finishedSignal = new Semaphore(0);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean closing;
    private long lastCommit = System.nanoTime();

    /** A partition's records and where it stands; touched by the loop's thread only. */
    private static final class Partition {
        final TopicPartition tp;
        final ArrayDeque<ConsumerRecord<byte[], byte[]>> waiting = new ArrayDeque<>();
        ConsumerRecord<byte[], byte[]> inFlight;
        long notBefore; // nanoTime before which the head may not run
        int attempts; // the head's failed handler runs
        long nextOffset = -1; // to commit: past every record whose outcome is stored
        long committed = -1;
        boolean paused;

        Partition(TopicPartition tp) {
            this.tp = tp;
        }
    }

    PartitionConsumer(KafkaConsumerConfiguration config, KafkaConsumer<byte[], byte[]> kafka,
                      KafkaProducer<byte[], byte[]> deadLetters, IdempotentConsumer consumer, Object handler) {
        this.config = config;
        this.kafka = kafka;
        this.deadLetters = deadLetters;
        this.consumer = consumer;
        this.handler = handler;
    }

    @Override
    public void run() {
        try {
            kafka.subscribe(config.getTopics(), new Rebalance());
            while (!closing) {
                // with records running, a poll that waited for new ones would hold back the next record
                // of each partition until it timed out (one record per partition per poll): poll without
                // waiting, and wait below for a record to finish instead
                boolean running = partitions.values().stream().anyMatch(p -> p.inFlight != null);
                ConsumerRecords<byte[], byte[]> polled = kafka.poll(running ? Duration.ZERO : POLL);
                for (TopicPartition tp : polled.partitions()) {
                    Partition p = partitions.get(tp);
                    if (p != null) {
                        p.waiting.addAll(polled.records(tp));
                    }
                }
                drainFinished();
                dispatch();
                commit(false);
                if (running && polled.isEmpty()) {
                    awaitFinished();
                }
            }
            finishInFlight(partitions.values(), config.getRevokeTimeout());
            commit(true);
        } catch (RuntimeException e) {
            if (!closing) {
                LOG.error("idempotency consumer '{}': its Kafka consumer stopped: {}", config.getName(), e.toString(), e);
            }
        } finally {
            try {
                kafka.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                LOG.debug("idempotency consumer '{}': closing: {}", config.getName(), e.toString());
            }
            stopped.countDown();
        }
    }

    /** Starts each partition's head record when nothing of the partition is in flight and its time has come. */
    private void dispatch() {
        long now = System.nanoTime();
        for (Partition p : partitions.values()) {
            if (p.inFlight == null && !p.waiting.isEmpty() && now - p.notBefore >= 0) {
                start(p, p.waiting.peekFirst());
            }
            boolean hold = p.waiting.size() >= config.getMaxPollRecords() || (p.inFlight == null
                && !p.waiting.isEmpty() && now - p.notBefore < 0);
            if (hold != p.paused) {
                if (hold) {
                    kafka.pause(List.of(p.tp));
                } else {
                    kafka.resume(List.of(p.tp));
                }
                p.paused = hold;
            }
        }
    }

    private void start(Partition p, ConsumerRecord<byte[], byte[]> r) {
        p.inFlight = r;
        String id = text(r, KafkaHeaders.MESSAGE_ID);
        CompletionStage<Disposition> decided;
        if (id == null || id.isBlank()) {
            decided = CompletableFuture.completedFuture(new Disposition.DeadLetter("the record has no "
                + KafkaHeaders.MESSAGE_ID + " header: duplicates of it cannot be told apart; publish it through the"
                + " outbox, or set the header"));
        } else if (r.value() == null) {
            decided = CompletableFuture.completedFuture(new Disposition.DeadLetter("the record has no value (a tombstone):"
                + " there is nothing to process"));
        } else {
            Map<String, Object> headers = new LinkedHashMap<>();
            for (Header h : r.headers()) {
                headers.put(h.key(), h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8));
            }
            String routingKey = text(r, KafkaHeaders.ROUTING_KEY);
            ReceivedMessage message = new ReceivedMessage(id, r.value(), text(r, KafkaHeaders.CONTENT_TYPE), headers,
                r.topic(), routingKey == null ? "" : routingKey, p.attempts > 0, p.attempts,
                r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8), r.partition());
            try {
                decided = handler instanceof TransactionalMessageHandler t ? consumer.process(message, t)
                    : consumer.process(message, (MessageHandler) handler);
            } catch (RuntimeException e) {
                decided = CompletableFuture.failedFuture(e);
            }
        }
        decided.whenComplete((d, failure) -> {
            Disposition disposition = failure != null ? new Disposition.Retry(config.getInProgressDelay(),
                failure.toString(), false, DeliveryOutcome.REQUEUED) : d;
            if (disposition instanceof Disposition.DeadLetter dl) {
                deadLetter(r, dl.reason()).whenComplete((v, f) -> finish(() -> deadLettered(p, r, f)));
            } else {
                finish(() -> settle(p, r, disposition));
            }
        });
    }

    private void settle(Partition p, ConsumerRecord<byte[], byte[]> r, Disposition d) {
        if (partitions.get(p.tp) != p || p.inFlight != r) {
            return; // the partition moved on meanwhile: its next owner finds the outcome stored
        }
        p.inFlight = null;
        if (d instanceof Disposition.Retry retry) {
            if (retry.counted()) {
                p.attempts++;
            }
            p.notBefore = System.nanoTime() + retry.delay().toNanos();
            return;
        }
        done(p, r);
    }

    private void deadLettered(Partition p, ConsumerRecord<byte[], byte[]> r, Throwable failure) {
        if (failure == null) {
            settle(p, r, new Disposition.DeadLetter("sent"));
            return;
        }
        LOG.warn("idempotency consumer '{}': the dead letter of {}-{}@{} was not acknowledged ({}); trying again in {}",
            config.getName(), r.topic(), r.partition(), r.offset(), failure.toString(), config.getRetryDelay());
        settle(p, r, new Disposition.Retry(config.getRetryDelay(), failure.toString(), false, DeliveryOutcome.REQUEUED));
    }

    private void done(Partition p, ConsumerRecord<byte[], byte[]> r) {
        p.waiting.pollFirst();
        p.attempts = 0;
        p.notBefore = 0;
        p.nextOffset = r.offset() + 1;
    }

    private CompletableFuture<Void> deadLetter(ConsumerRecord<byte[], byte[]> r, String reason) {
        RecordHeaders headers = new RecordHeaders(r.headers().toArray());
        headers.remove(KafkaHeaders.DEAD_LETTER_REASON);
        headers.add(KafkaHeaders.DEAD_LETTER_REASON, reason.getBytes(StandardCharsets.UTF_8));
        headers.add(KafkaHeaders.ORIGIN, (r.topic() + "-" + r.partition() + "@" + r.offset()).getBytes(StandardCharsets.UTF_8));
        CompletableFuture<Void> sent = new CompletableFuture<>();
        try {
            deadLetters.send(new ProducerRecord<>(config.deadLetterTopicOf(r.topic()), null, r.key(), r.value(), headers),
                (md, failure) -> {
                    if (failure == null) {
                        sent.complete(null);
                    } else {
                        sent.completeExceptionally(failure);
                    }
                });
        } catch (RuntimeException e) {
            sent.completeExceptionally(e);
        }
        return sent;
    }

    /** Hands {@code settle} to the loop's thread, and wakes the loop if it waits for it. */
    private void finish(Runnable settle) {
        finished.add(settle);
        finishedSignal.release();
    }

    /** Waits until a record finishes, or one poll's time (new records and the group are looked at then). */
    private void awaitFinished() {
        try {
            if (finishedSignal.tryAcquire(POLL.toNanos(), TimeUnit.NANOSECONDS)) {
                finishedSignal.drainPermits(); // drainFinished runs every entry there is
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closing = true;
        }
    }

    private void drainFinished() {
        for (Runnable r = finished.poll(); r != null; r = finished.poll()) {
            r.run();
        }
    }

    /** Commits the partitions that moved; {@code now} waits for the commit, else at most every 100 ms, async. */
    private void commit(boolean now) {
        if (!now && System.nanoTime() - lastCommit < COMMIT_EVERY_NANOS) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (Partition p : partitions.values()) {
            if (p.nextOffset > p.committed) {
                offsets.put(p.tp, new OffsetAndMetadata(p.nextOffset));
            }
        }
        commit(offsets, now);
    }

    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, boolean sync) {
        lastCommit = System.nanoTime();
        if (offsets.isEmpty()) {
            return;
        }
        if (sync) {
            try {
                kafka.commitSync(offsets);
                committed(offsets);
            } catch (RuntimeException e) {
                LOG.warn("idempotency consumer '{}': committing {} failed: {}; the records come again and are found"
                    + " processed", config.getName(), offsets.keySet(), e.toString());
            }
        } else {
            kafka.commitAsync(offsets, (done, failure) -> {
                if (failure == null) {
                    committed(done);
                } // else: the next commit carries a later offset anyway
            });
        }
    }

    private void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
        offsets.forEach((tp, o) -> {
            Partition p = partitions.get(tp);
            if (p != null) {
                p.committed = Math.max(p.committed, o.offset());
            }
        });
    }

    /** Waits, handling completions, until no record of {@code ps} is in flight, or {@code timeout}. */
    private void finishInFlight(Collection<Partition> ps, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (ps.stream().anyMatch(p -> p.inFlight != null) && System.nanoTime() - deadline < 0) {
            drainFinished();
            try {
                Thread.sleep(5); // the consumer's own thread, in a rebalance or at shutdown: nothing else to do
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        drainFinished();
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            List<Partition> leaving = revoked.stream().map(partitions::get).filter(java.util.Objects::nonNull).toList();
            if (leaving.isEmpty()) {
                return;
            }
            finishInFlight(leaving, config.getRevokeTimeout());
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (Partition p : leaving) {
                if (p.inFlight != null) {
                    LOG.warn("idempotency consumer '{}': {}@{} still runs after {}; its partition moves without it"
                        + " (the next owner finds its id in progress, then processed)", config.getName(), p.tp,
                        p.inFlight.offset(), config.getRevokeTimeout());
                }
                if (p.nextOffset > p.committed) {
                    offsets.put(p.tp, new OffsetAndMetadata(p.nextOffset));
                }
            }
            commit(offsets, true);
            leaving.forEach(p -> partitions.remove(p.tp));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            lost.forEach(partitions::remove); // another member owns them already: committing would be refused
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            for (TopicPartition tp : assigned) {
                partitions.put(tp, new Partition(tp));
            }
        }
    }

    private static String text(ConsumerRecord<byte[], byte[]> r, String header) {
        Header h = r.headers().lastHeader(header);
        return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Stops the loop: waits up to {@code revoke-timeout} for records in flight, commits, leaves the group. */
    void close(Duration timeout) {
        closing = true; // the loop sees it within one poll (20 ms); no wakeup(), which a commit after it would meet
        try {
            stopped.await(timeout.toMillis() + config.getRevokeTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }


}
