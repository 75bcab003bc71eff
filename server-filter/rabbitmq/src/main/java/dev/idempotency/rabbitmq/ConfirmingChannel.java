package dev.idempotency.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.ShutdownSignalException;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * One AMQP channel in publisher-confirm mode, used from one thread only: every operation on it
 * runs on the channel's own single thread, in order (the client's channels must not be written
 * by several threads at once), and nothing waits there for the broker. A publish completes when
 * the broker confirms it, fails when the broker refuses it or the channel goes down before; the
 * caller's continuations run on the client's I/O thread and must be short.
 */
final class ConfirmingChannel implements AutoCloseable {

    /** Work on the channel. */
    @FunctionalInterface
    interface Task<T> {
        T run(Channel channel) throws IOException;
    }

    private final Channel channel;
    private final ExecutorService thread;
    private final ConcurrentSkipListMap<Long, CompletableFuture<Void>> unconfirmed = new ConcurrentSkipListMap<>();

    ConfirmingChannel(Channel channel, String name) throws IOException {
        this.channel = channel;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        channel.confirmSelect();
        channel.addConfirmListener(new ConfirmListener() {
            @Override
            public void handleAck(long seq, boolean multiple) {
                settle(seq, multiple, null);
            }

            @Override
            public void handleNack(long seq, boolean multiple) {
                settle(seq, multiple, "the broker refused it (nack)");
            }
        });
        // a channel that goes down takes its unconfirmed publishes with it: they fail now, and are
        // published again by whoever wants them (after recovery the sequence starts anew)
        channel.addShutdownListener(this::failAll);
    }

    Channel channel() {
        return channel;
    }

    /** Runs {@code task} on the channel's thread. */
    <T> CompletableFuture<T> run(Task<T> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            thread.execute(() -> {
                try {
                    result.complete(task.run(channel));
                } catch (Exception e) {
                    result.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            result.completeExceptionally(new IOException("the channel is closed"));
        }
        return result;
    }

    /** Publishes on the channel's thread; completes when the broker confirmed the message. */
    CompletableFuture<Void> publish(String exchange, String routingKey, boolean mandatory, AMQP.BasicProperties props,
                                    byte[] body) {
        return run(ch -> {
            CompletableFuture<Void> confirmed = new CompletableFuture<>();
            long seq = ch.getNextPublishSeqNo();
            unconfirmed.put(seq, confirmed);
            try {
                ch.basicPublish(exchange, routingKey, mandatory, props, body);
            } catch (IOException | RuntimeException e) {
                unconfirmed.remove(seq);
                confirmed.completeExceptionally(e);
            }
            return confirmed;
        }).thenCompose(c -> c);
    }

    private void settle(long seq, boolean multiple, String refusal) {
        Map<Long, CompletableFuture<Void>> done = multiple ? unconfirmed.headMap(seq, true) : single(seq);
        for (Map.Entry<Long, CompletableFuture<Void>> e : done.entrySet()) {
            CompletableFuture<Void> f = unconfirmed.remove(e.getKey());
            if (f != null) {
                if (refusal == null) {
                    f.complete(null);
                } else {
                    f.completeExceptionally(new IOException(refusal));
                }
            }
        }
    }

    private ConcurrentNavigableMap<Long, CompletableFuture<Void>> single(long seq) {
        return unconfirmed.subMap(seq, true, seq, true);
    }

    private void failAll(ShutdownSignalException cause) {
        IOException e = new IOException("the channel went down before the broker confirmed: " + cause.getMessage(), cause);
        for (Long seq : unconfirmed.keySet()) {
            CompletableFuture<Void> f = unconfirmed.remove(seq);
            if (f != null) {
                f.completeExceptionally(e);
            }
        }
    }

    @Override
    public void close() {
        thread.shutdown();
        try {
            if (channel.isOpen()) {
                channel.close();
            }
        } catch (Exception e) {
            // closing on the way out
        }
        failAll(new ShutdownSignalException(false, true, null, channel));
    }
}
