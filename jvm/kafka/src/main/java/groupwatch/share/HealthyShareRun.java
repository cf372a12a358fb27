package groupwatch.share;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A healthy share group through its everyday life: three consumers join one by one while
 * records arrive, each accepting every record it gets (implicit acknowledgement, committed
 * after each poll); then the first leaves, and the others consume what follows. After each
 * round every record produced was delivered once; the step {@code round-N} says what Admin
 * reports then. Nothing about this group is a fault.
 *
 * <p>Arguments: bootstrap, group, topic, partitions, records per partition per round.
 */
public final class HealthyShareRun {
    private HealthyShareRun() {}

    /** A consumer on a thread of its own: polls and accepts until told to stop. */
    static final class Member implements Runnable {
        final String name;
        final String topic;
        final Properties props;
        final AtomicInteger delivered;
        final AtomicBoolean stop = new AtomicBoolean();
        final Thread thread;

        Member(String bootstrap, String group, String topic, String name, AtomicInteger delivered) {
            this.name = name;
            this.topic = topic;
            this.delivered = delivered;
            props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            thread = new Thread(this, name);
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(props)) {
                c.subscribe(List.of(topic));
                while (!stop.get()) {
                    int got = 0;
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) got++;
                    if (got > 0) c.commitSync();
                    delivered.addAndGet(got);
                }
                c.commitSync();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        int perRound = Integer.parseInt(args[4]);
        AtomicInteger delivered = new AtomicInteger();
        List<Member> members = new ArrayList<>();
        try (Admin admin = ShareStateRun.admin(bootstrap)) {
            ShareStateRun.topicReadFromEarliest(admin, group, topic, partitions);
            int produced = 0;
            int round = 0;
            for (String name : new String[] {"a", "b", "c", "-a"}) {
                if (name.startsWith("-")) {
                    Member leaving = members.stream().filter(m -> m.name.equals(name.substring(1)))
                        .findFirst().orElseThrow();
                    leaving.stop.set(true);
                    leaving.thread.join(30_000);
                    members.remove(leaving);
                    event("left", leaving.name);
                } else {
                    Member m = new Member(bootstrap, group, topic, name, delivered);
                    members.add(m);
                    m.thread.start();
                    event("joined", name);
                }
                ShareStateRun.produce(bootstrap, topic, partitions, perRound);
                produced += partitions * perRound;
                long deadline = System.currentTimeMillis() + 90_000;
                while (delivered.get() < produced) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("delivered " + delivered.get() + " of " + produced);
                    }
                    Thread.sleep(100);
                }
                // The last acknowledgements reach the share coordinator with the next commit.
                Thread.sleep(1500);
                round++;
                ShareStateRun.step(admin, group, topic, partitions, "round-" + round);
            }
            ObjectNode done = ShareStateRun.JSON.createObjectNode();
            done.put("event", "delivered");
            done.put("records", delivered.get());
            done.put("produced", produced);
            ShareStateRun.say(done);
        } finally {
            for (Member m : members) m.stop.set(true);
            for (Member m : members) m.thread.join(30_000);
        }
        System.out.flush();
        System.exit(0); // the share consumer leaves non-daemon threads behind
    }

    static void event(String what, String member) {
        ObjectNode o = ShareStateRun.JSON.createObjectNode();
        o.put("event", what);
        o.put("member", member);
        o.put("time_ms", System.currentTimeMillis());
        ShareStateRun.say(o);
    }
}
