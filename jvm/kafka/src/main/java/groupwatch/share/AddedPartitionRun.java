package groupwatch.share;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * KAFKA-20742 on a real broker: a partition added to a topic a share group already consumes.
 *
 * <p>A share consumer (the default {@code share.auto.offset.reset}, latest) joins a group on a
 * one-partition topic and consumes records of it, then leaves; the topic gets a second partition
 * and {@code BEFORE} records are produced to it while the group has no member (so nothing
 * initialises the new partition yet); then a consumer joins again and consumes what arrives,
 * {@code AFTER} more records on the new partition. A broker before the fix starts the new
 * partition at its end offset then (the {@code BEFORE} records are never delivered); a fixed one
 * at 0.
 *
 * <p>Args: {@code BOOTSTRAP GROUP TOPIC BEFORE AFTER}. Output, one JSON line each: {@code topic}
 * (its id), {@code delivery} (partition, offset of every record a consumer got), {@code done}.
 */
public final class AddedPartitionRun {
    private static final ObjectMapper JSON = new ObjectMapper();

    private AddedPartitionRun() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        int before = Integer.parseInt(args[3]);
        int after = Integer.parseInt(args[4]);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
                KafkaProducer<byte[], byte[]> producer = producer(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            ObjectNode t = JSON.createObjectNode();
            t.put("event", "topic");
            t.put("topic_id", d.topicId().toString());
            say(t);

            // The group's first subscription: records keep arriving until the consumer gets some.
            try (KafkaShareConsumer<byte[], byte[]> first = consumer(bootstrap, group, "first")) {
                first.subscribe(List.of(topic));
                int got = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (got < 3 && System.currentTimeMillis() < deadline) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "p0".getBytes())).get();
                    got += deliveries(first.poll(Duration.ofMillis(500)));
                }
                if (got < 3) {
                    throw new IllegalStateException("the first consumer got " + got + " records");
                }
            }

            // A partition added while the group has no member, and records on it.
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get(60, TimeUnit.SECONDS);
            for (int i = 0; i < before; i++) {
                producer.send(new ProducerRecord<>(topic, 1, null, ("before-" + i).getBytes())).get();
            }

            try (KafkaShareConsumer<byte[], byte[]> second = consumer(bootstrap, group, "second")) {
                second.subscribe(List.of(topic));
                long until = System.currentTimeMillis() + 8_000;
                while (System.currentTimeMillis() < until) {
                    deliveries(second.poll(Duration.ofMillis(500)));
                }
                for (int i = 0; i < after; i++) {
                    producer.send(new ProducerRecord<>(topic, 1, null, ("after-" + i).getBytes())).get();
                }
                int got = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (got < after && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : second.poll(Duration.ofMillis(500))) {
                        delivery(r);
                        if (new String(r.value()).startsWith("after-")) {
                            got++;
                        }
                    }
                }
                if (got < after) {
                    throw new IllegalStateException("the second consumer got " + got + " later records");
                }
            }
            ObjectNode done = JSON.createObjectNode();
            done.put("event", "done");
            say(done);
        }
        System.out.flush();
        System.exit(0); // the share consumer leaves non-daemon threads behind
    }

    private static int deliveries(Iterable<ConsumerRecord<byte[], byte[]>> records) throws Exception {
        int n = 0;
        for (ConsumerRecord<byte[], byte[]> r : records) {
            delivery(r);
            n++;
        }
        return n;
    }

    private static void delivery(ConsumerRecord<byte[], byte[]> r) throws Exception {
        ObjectNode o = JSON.createObjectNode();
        o.put("event", "delivery");
        o.put("partition", r.partition());
        o.put("offset", r.offset());
        o.put("value", new String(r.value()));
        say(o);
    }

    private static KafkaShareConsumer<byte[], byte[]> consumer(String bootstrap, String group, String name) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static void say(ObjectNode o) throws Exception {
        System.out.println(JSON.writeValueAsString(o));
        System.out.flush();
    }
}
