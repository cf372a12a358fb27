package groupwatch.members;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;

/**
 * One group member of a {@link MemberHost}: a {@link KafkaConsumer} polling on a thread of its
 * own, committing what it fetched, and reporting on the host's output every change of what it
 * owns ({@code assigned NAME t-p,...}, sorted) and of its member id ({@code member NAME ID}).
 */
public final class Member implements ConsumerRebalanceListener {
    /** How a member subscribes: topics, a client-side pattern or a broker-side regex. */
    @FunctionalInterface
    public interface Subscription {
        void subscribe(KafkaConsumer<byte[], byte[]> consumer, ConsumerRebalanceListener listener);
    }

    private final String name;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Thread thread;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong stallUntil = new AtomicLong(0);
    private final TreeSet<String> owned = new TreeSet<>();
    private String memberId = "";
    /** Poll again after a poll that threw (an application that retries), instead of ending. */
    private final boolean retry;

    public Member(String name, Properties config, Subscription subscription) {
        this(name, config, subscription, false);
    }

    public Member(String name, Properties config, Subscription subscription, boolean retry) {
        this.name = name;
        this.retry = retry;
        consumer = new KafkaConsumer<>(config);
        subscription.subscribe(consumer, this);
        thread = new Thread(this::loop, "member-" + name);
        thread.setDaemon(true);
    }

    public String name() {
        return name;
    }

    void start() {
        thread.start();
    }

    /** Stop polling for {@code millis}: past max.poll.interval.ms the member is out of the group. */
    void stall(long millis) {
        stallUntil.set(System.currentTimeMillis() + millis);
    }

    /** Stop polling for good, without leaving. */
    void kill() {
        stallUntil.set(Long.MAX_VALUE);
    }

    private void loop() {
        try {
            while (running.get()) {
                if (System.currentTimeMillis() < stallUntil.get()) {
                    Thread.sleep(100);
                    continue;
                }
                boolean fetched;
                try {
                    fetched = !consumer.poll(Duration.ofMillis(200)).isEmpty();
                } catch (InterruptException e) {
                    throw e;
                } catch (RuntimeException e) {
                    if (!retry) {
                        throw e;
                    }
                    MemberHost.say("note " + name + " poll failed: " + e.getMessage());
                    Thread.sleep(100);
                    continue;
                }
                reportMemberId();
                if (fetched) {
                    commit();
                }
            }
        } catch (InterruptedException | InterruptException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            MemberHost.say("error " + name + " " + e);
        }
    }

    private void commit() {
        try {
            consumer.commitSync(Duration.ofSeconds(10));
        } catch (InterruptException e) {
            throw e;
        } catch (RuntimeException e) {
            // a commit racing a rebalance is refused; the next one goes through
            MemberHost.say("note " + name + " commit refused: " + e.getClass().getSimpleName());
        }
    }

    private void reportMemberId() {
        String id = consumer.groupMetadata().memberId();
        if (id != null && !id.isEmpty() && !id.equals(memberId)) {
            memberId = id;
            MemberHost.say("member " + name + " " + id);
        }
    }

    /**
     * Stop polling and close the consumer: a dynamic member leaves the group; a static one stays
     * in it (MemberEpoch -2 under the consumer protocol) until its instance id comes back or its
     * session ends.
     */
    void close() throws InterruptedException {
        running.set(false);
        stallUntil.set(0);
        thread.join(30_000);
        consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.DEFAULT)
            .withTimeout(Duration.ofSeconds(10)));
    }

    private void report() {
        MemberHost.say("assigned " + name + " " + String.join(",", owned));
    }

    private static List<String> names(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.topic() + "-" + tp.partition());
        }
        return out;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        owned.removeAll(names(partitions));
        report();
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        owned.removeAll(names(partitions));
        report();
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        owned.addAll(names(partitions));
        report();
    }
}
