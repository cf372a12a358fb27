package groupwatch.share;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A real share group (KIP-932) on a real broker, for the {@code __share_group_state} tests: one
 * {@link KafkaShareConsumer} in explicit acknowledgement mode accepts every record but one, which
 * it releases each time it is delivered until the broker archives it (its delivery attempts run
 * out); then more records arrive while nobody consumes; then a second consumer drains the topic.
 *
 * <p>Then, with {@code STALL_GROUP STALL_TOPIC HOLD_MS}, a second share group on a topic of its own
 * whose consumers stop acknowledging while records wait ({@link #stall}).
 *
 * <p>Args: {@code BOOTSTRAP GROUP TOPIC PARTITIONS RECORDS_PER_PARTITION POISON_OFFSET [STALL_GROUP
 * STALL_TOPIC HOLD_MS]}. The
 * poison record is {@code POISON_OFFSET} of partition 0. Output, one JSON line each: {@code
 * topic} (its id), {@code delivery} (every record the consumer got: partition, offset, delivery
 * count, what it answered), and at each {@code step} what Kafka's Admin says of the group
 * ({@code listShareGroupOffsets}: start offset and lag per partition), the topic's end offsets
 * and the end offsets of {@code __share_group_state}, so a reader of that topic can replay it up
 * to the moment of each step.
 */
public final class ShareStateRun {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final String STATE_TOPIC = "__share_group_state";

    private ShareStateRun() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        int perPartition = Integer.parseInt(args[4]);
        long poison = Long.parseLong(args[5]);
        try (Admin admin = admin(bootstrap)) {
            topicReadFromEarliest(admin, group, topic, partitions);
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            ObjectNode t = JSON.createObjectNode();
            t.put("event", "topic");
            t.put("topic_id", d.topicId().toString());
            say(t);

            produce(bootstrap, topic, partitions, perPartition);
            int expectedAccepted = partitions * perPartition - 1;
            consume(bootstrap, group, topic, "first", poison, expectedAccepted, true);
            step(admin, group, topic, partitions, "consumed");

            produce(bootstrap, topic, partitions, perPartition); // nobody is consuming now
            step(admin, group, topic, partitions, "produced");

            consume(bootstrap, group, topic, "second", -1, partitions * perPartition, false);
            step(admin, group, topic, partitions, "drained");

            if (args.length > 6) {
                stall(admin, bootstrap, args[6], args[7], partitions, perPartition, Long.parseLong(args[8]));
                delete(admin, args[6]);
            }
        }
        System.out.flush();
        System.exit(0); // the share consumer leaves non-daemon threads behind
    }

    /**
     * A second share group whose two consumers stop acknowledging while records wait: each polls
     * for a while, acknowledges nothing and polls no more (staying members: the heartbeat runs
     * on its own thread), for {@code holdMs}; then the step {@code stalled}, with the members
     * the brokers describe and their assignments.
     */
    static void stall(Admin admin, String bootstrap, String group, String topic, int partitions,
            int perPartition, long holdMs) throws Exception {
        topicReadFromEarliest(admin, group, topic, partitions);
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        ObjectNode t = JSON.createObjectNode();
        t.put("event", "stall_topic");
        t.put("topic_id", d.topicId().toString());
        say(t);
        produce(bootstrap, topic, partitions, perPartition);
        List<KafkaShareConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        try {
            for (String name : List.of("a", "b")) {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
                p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
                c.subscribe(List.of(topic));
                consumers.add(c);
            }
            // Each consumer accepts what it gets below offset 2 (so the share coordinator writes
            // a start offset: until the first acknowledgement it holds none), leaves the rest
            // unacknowledged and polls no more.
            int got = 0;
            java.util.Set<Integer> accepted = new java.util.TreeSet<>();
            long deadline = System.currentTimeMillis() + 30_000;
            boolean[] holding = new boolean[consumers.size()];
            while (System.currentTimeMillis() < deadline && accepted.size() < partitions) {
                boolean polled = false;
                for (int i = 0; i < consumers.size(); i++) {
                    if (holding[i]) continue;
                    polled = true;
                    KafkaShareConsumer<byte[], byte[]> c = consumers.get(i);
                    int n = 0;
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                        n++;
                        if (r.offset() < 2) {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            accepted.add(r.partition());
                        }
                    }
                    if (n > 0) {
                        c.commitSync();
                        holding[i] = true; // the rest it will never acknowledge
                    }
                    got += n;
                }
                if (!polled) break;
            }
            if (got == 0) throw new IllegalStateException("the stalled group got no records");
            ObjectNode h = JSON.createObjectNode();
            h.put("event", "holding");
            h.put("records", got);
            ArrayNode acc = h.putArray("accepted_partitions");
            accepted.forEach(acc::add);
            h.put("time_ms", System.currentTimeMillis());
            say(h);
            Thread.sleep(holdMs);
            step(admin, group, topic, partitions, "stalled");
            var described = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                .get(30, TimeUnit.SECONDS);
            ObjectNode m = JSON.createObjectNode();
            m.put("event", "members");
            ArrayNode members = m.putArray("members");
            described.members().forEach(mem -> {
                ObjectNode row = members.addObject();
                row.put("member_id", mem.consumerId());
                row.put("client_id", mem.clientId());
                ArrayNode parts = row.putArray("partitions");
                mem.assignment().topicPartitions().stream().map(TopicPartition::partition).sorted()
                    .forEach(parts::add);
            });
            say(m);
        } finally {
            for (KafkaShareConsumer<byte[], byte[]> c : consumers) c.close(Duration.ofSeconds(5));
        }
    }

    /**
     * The stalled group deleted once its consumers left (Admin {@code deleteShareGroups}, as
     * {@code kafka-share-groups.sh --delete} does): the share coordinator writes a tombstone of
     * each of its partitions' states. A group whose members are still leaving is not empty
     * yet, and is asked again.
     */
    static void delete(Admin admin, String group) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                break;
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof GroupNotEmptyException)
                        || System.currentTimeMillis() > deadline) throw e;
                Thread.sleep(500);
            }
        }
        ObjectNode d = JSON.createObjectNode();
        d.put("event", "deleted");
        d.put("group", group);
        d.put("time_ms", System.currentTimeMillis());
        say(d);
    }

    /**
     * A new topic of {@code partitions}, and {@code group} set to read it from its first
     * offset: a new share group starts at the latest offset, which would skip what the run
     * produces before its consumers are assigned.
     */
    static void topicReadFromEarliest(Admin admin, String group, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void produce(String bootstrap, String topic, int partitions, int perPartition) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < perPartition; i++) {
                for (int part = 0; part < partitions; part++) {
                    producer.send(new ProducerRecord<>(topic, part, null, ("r" + i).getBytes())).get();
                }
            }
        }
    }

    /**
     * Polls until {@code accepted} records were accepted and the poison record (if any) stopped
     * coming back, acknowledging each one explicitly and committing after every poll.
     */
    static void consume(String bootstrap, String group, String topic, String name, long poison,
            int accepted, boolean waitForArchive) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            int done = 0;
            long quietSince = -1;
            long deadline = System.currentTimeMillis() + 90_000;
            while (System.currentTimeMillis() < deadline) {
                int got = 0;
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                    got++;
                    boolean isPoison = r.partition() == 0 && r.offset() == poison;
                    AcknowledgeType answer = isPoison ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    c.acknowledge(r, answer);
                    if (!isPoison) done++;
                    ObjectNode o = JSON.createObjectNode();
                    o.put("event", "delivery");
                    o.put("consumer", name);
                    o.put("partition", r.partition());
                    o.put("offset", r.offset());
                    o.put("delivery_count", r.deliveryCount().orElse((short) -1));
                    o.put("answer", answer.toString());
                    say(o);
                }
                c.commitSync();
                if (done >= accepted) {
                    if (!waitForArchive) break;
                    // Released records come straight back; a quiet second means it is archived.
                    if (got > 0) quietSince = -1;
                    else if (quietSince < 0) quietSince = System.currentTimeMillis();
                    else if (System.currentTimeMillis() - quietSince > 1500) break;
                }
            }
            if (done < accepted) throw new IllegalStateException(name + " accepted " + done + " of " + accepted);
        }
    }

    static void step(Admin admin, String group, String topic, int partitions, String name) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
        Map<TopicPartition, SharePartitionOffsetInfo> info = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps)))
            .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        ObjectNode o = JSON.createObjectNode();
        o.put("event", "step");
        o.put("step", name);
        ArrayNode rows = o.putArray("admin");
        for (TopicPartition tp : tps) {
            SharePartitionOffsetInfo i = info.get(tp);
            ObjectNode row = rows.addObject();
            row.put("partition", tp.partition());
            if (i == null) continue;
            row.put("start_offset", i.startOffset());
            row.put("lag", i.lag().orElse(null));
            row.put("leader_epoch", i.leaderEpoch().orElse(null));
        }
        o.set("end_offsets", endOffsets(admin, tps));
        int stateParts = admin.describeTopics(List.of(STATE_TOPIC)).allTopicNames().get(30, TimeUnit.SECONDS)
            .get(STATE_TOPIC).partitions().size();
        List<TopicPartition> state = new ArrayList<>();
        for (int i = 0; i < stateParts; i++) state.add(new TopicPartition(STATE_TOPIC, i));
        o.set("state_end_offsets", endOffsets(admin, state));
        int offsetsParts = admin.describeTopics(List.of("__consumer_offsets")).allTopicNames()
            .get(30, TimeUnit.SECONDS).get("__consumer_offsets").partitions().size();
        List<TopicPartition> offsets = new ArrayList<>();
        for (int i = 0; i < offsetsParts; i++) offsets.add(new TopicPartition("__consumer_offsets", i));
        o.set("offsets_end_offsets", endOffsets(admin, offsets));
        o.put("time_ms", System.currentTimeMillis());
        say(o);
    }

    static ObjectNode endOffsets(Admin admin, Collection<TopicPartition> tps) throws Exception {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        tps.forEach(tp -> ask.put(tp, OffsetSpec.latest()));
        var got = admin.listOffsets(ask).all().get(30, TimeUnit.SECONDS);
        Map<Integer, Long> sorted = new TreeMap<>();
        got.forEach((tp, r) -> sorted.put(tp.partition(), r.offset()));
        ObjectNode out = JSON.createObjectNode();
        sorted.forEach((part, off) -> out.put(Integer.toString(part), off));
        return out;
    }

    static void say(ObjectNode o) {
        try {
            System.out.println(JSON.writeValueAsString(o));
            System.out.flush();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
