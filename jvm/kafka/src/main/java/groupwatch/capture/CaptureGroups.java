package groupwatch.capture;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.kafka.connect.runtime.Herder;
import org.apache.kafka.connect.runtime.distributed.DistributedHerder;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorInfo;
import org.apache.kafka.connect.util.FutureCallback;

/**
 * Real groups on a real broker, so that {@code __consumer_offsets} holds what a broker writes for
 * each kind of group: the record corpus under {@code tests/vectors/captured} is a dump of it
 * (made by {@code tests/vectors/capture.py}, which runs this once per scenario).
 *
 * <pre>
 * CaptureGroups BOOTSTRAP SCENARIO PREFIX [WORKDIR]
 * </pre>
 * Scenarios: {@code setup} (topics, data, group features), {@code classic-eager},
 * {@code classic-cooperative}, {@code consumer}, {@code consumer-regex}, {@code consumer-mixed},
 * {@code consumer-upgrade}, {@code deleted}, {@code share}, {@code connect}. Every group is named
 * PREFIX + scenario (+ a suffix); members join one at a time, one leaves cleanly, one restarts.
 * Progress lines go to stdout; a scenario that cannot reach a state it waits for says so and
 * goes on (the corpus then simply lacks those records), so one stubborn group never hides the
 * others.
 */
public final class CaptureGroups {
    static final String ORDERS = "capture-orders"; // 6 partitions
    static final String CLICKS = "capture-clicks"; // 4 partitions
    static final String SHARED = "capture-shared"; // 3 partitions, share groups
    static final String SINK_IN = "capture-connect-in"; // 2 partitions, Connect's sink connector
    static final Map<String, Integer> TOPICS = Map.of(ORDERS, 6, CLICKS, 4, SHARED, 3, SINK_IN, 2,
        "capture-words", 4);

    private CaptureGroups() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String scenario = args[1];
        String prefix = args[2];
        Path work = Path.of(args.length > 3 ? args[3] : System.getProperty("java.io.tmpdir"));
        String group = prefix + scenario;
        try (Feeder feeder = scenario.equals("setup") ? null : new Feeder(bootstrap)) {
            switch (scenario) {
                case "setup" -> setup(bootstrap);
                case "classic-eager" -> classic(bootstrap, group, "org.apache.kafka.clients.consumer.RangeAssignor");
                case "classic-cooperative" -> classic(bootstrap, group,
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
                case "consumer" -> consumer(bootstrap, group);
                case "consumer-regex" -> consumerRegex(bootstrap, group);
                case "consumer-mixed" -> consumerMixed(bootstrap, group);
                case "consumer-upgrade" -> consumerUpgrade(bootstrap, group);
                case "deleted" -> deleted(bootstrap, prefix);
                case "share" -> share(bootstrap, group);
                case "connect" -> connect(bootstrap, group, work);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        }
        say("done " + scenario);
        System.exit(0); // Connect and share consumers leave non-daemon threads behind
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    // --- setup ------------------------------------------------------------------------------------

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void setup(String bootstrap) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            List<NewTopic> topics = new ArrayList<>();
            TOPICS.forEach((name, n) -> topics.add(new NewTopic(name, n, (short) 1)));
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
            // Share and streams groups are behind feature flags; raise each to the highest level
            // the broker supports (a no-op where it already is), and print what is finalized.
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            Map<String, FeatureUpdate> updates = new HashMap<>();
            for (String f : List.of("share.version", "streams.version", "group.version")) {
                SupportedVersionRange supported = features.supportedFeatures().get(f);
                FinalizedVersionRange finalized = features.finalizedFeatures().get(f);
                short have = finalized == null ? 0 : finalized.maxVersionLevel();
                if (supported != null && supported.maxVersion() > have) {
                    updates.put(f, new FeatureUpdate(supported.maxVersion(), FeatureUpdate.UpgradeType.UPGRADE));
                    say("raising " + f + " from " + have + " to " + supported.maxVersion());
                }
            }
            if (!updates.isEmpty()) {
                admin.updateFeatures(updates, new UpdateFeaturesOptions()).all().get(30, TimeUnit.SECONDS);
            }
            features = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            for (var e : new TreeSet<>(features.finalizedFeatures().keySet())) {
                say("feature " + e + "=" + features.finalizedFeatures().get(e).maxVersionLevel());
            }
        }
        try (KafkaProducer<String, String> producer = producer(bootstrap)) {
            for (var t : TOPICS.entrySet()) {
                for (int i = 0; i < 20 * t.getValue(); i++) {
                    producer.send(new ProducerRecord<>(t.getKey(), i % t.getValue(), "k" + (i % 7), "v" + i));
                }
            }
            producer.flush();
        }
    }

    static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return new KafkaProducer<>(p);
    }

    /** A few records a second on every topic, so members always have something to commit. */
    static final class Feeder implements AutoCloseable {
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        Feeder(String bootstrap) {
            thread = new Thread(() -> {
                try (KafkaProducer<String, String> producer = producer(bootstrap)) {
                    int i = 0;
                    while (running.get()) {
                        for (var t : TOPICS.entrySet()) {
                            producer.send(new ProducerRecord<>(t.getKey(), i % t.getValue(), "k" + (i % 7), "v" + i));
                        }
                        i++;
                        Thread.sleep(250);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "feeder");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            thread.join(5000);
        }
    }

    // --- consumers ----------------------------------------------------------------------------------

    /** One member: a consumer polling and committing on its own thread. */
    static final class Member {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final AtomicBoolean running = new AtomicBoolean(true);
        volatile Set<TopicPartition> owned = Set.of();
        final Thread thread;

        Member(String bootstrap, String group, String name, Map<String, Object> extra,
               Consumer<KafkaConsumer<byte[], byte[]>> subscribe) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
            p.putAll(extra);
            consumer = new KafkaConsumer<>(p);
            subscribe.accept(consumer);
            thread = new Thread(this::loop, "member-" + name);
        }

        Member start() {
            thread.start();
            return this;
        }

        private void loop() {
            long lastCommit = 0;
            try {
                while (running.get()) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                    owned = Set.copyOf(consumer.assignment());
                    long now = System.currentTimeMillis();
                    if (!records.isEmpty() && now - lastCommit > 1000) {
                        try {
                            consumer.commitSync(Duration.ofSeconds(10));
                        } catch (RuntimeException e) {
                            // a commit racing a rebalance is refused; the next one goes through
                            say("commit " + name + " " + e.getClass().getSimpleName());
                        }
                        lastCommit = now;
                    }
                }
            } catch (RuntimeException e) {
                say("member " + name + " failed: " + e);
            } finally {
                // DEFAULT: a dynamic member leaves; a static one leaves as static (epoch -2 in the
                // consumer protocol) or not at all (classic), so that its restart under the same
                // instance id takes its place.
                try {
                    consumer.close(CloseOptions.groupMembershipOperation(
                        CloseOptions.GroupMembershipOperation.DEFAULT).timeout(Duration.ofSeconds(30)));
                } catch (RuntimeException e) {
                    say("close " + name + " " + e);
                }
            }
        }

        void stop() throws InterruptedException {
            running.set(false);
            thread.join(60_000);
        }
    }

    /** Wait until the live members own every partition of {@code partitions} between them, each
     * owns something, and that has held for a second. */
    static void settle(String what, List<Member> live, int partitions) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        long stableSince = -1;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            Set<TopicPartition> all = new HashSet<>();
            int total = 0;
            boolean everyone = true;
            List<String> parts = new ArrayList<>();
            for (Member m : live) {
                Set<TopicPartition> o = m.owned;
                all.addAll(o);
                total += o.size();
                everyone &= !o.isEmpty() || live.size() > partitions;
                parts.add(m.name + "=" + o.size());
            }
            String now = String.join(",", parts);
            boolean done = all.size() == partitions && total == partitions && everyone;
            if (done && now.equals(last)) {
                if (stableSince < 0) stableSince = System.currentTimeMillis();
                if (System.currentTimeMillis() - stableSince > 1000) {
                    say("settled " + what + " " + now);
                    return;
                }
            } else {
                stableSince = -1;
            }
            last = now;
            Thread.sleep(100);
        }
        say("unsettled " + what + " " + last);
    }

    static Map<String, Object> props(Object... kv) {
        Map<String, Object> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static Consumer<KafkaConsumer<byte[], byte[]>> topics(String... names) {
        return c -> c.subscribe(List.of(names));
    }

    /** Join one by one, one member leaves cleanly, the static one restarts (same instance id). */
    static void joinLeaveRestart(String what, int partitions, Supplier<Member> a, Supplier<Member> b,
                                 Supplier<Member> staticMember) throws InterruptedException {
        List<Member> live = new ArrayList<>();
        Member m1 = a.get().start();
        live.add(m1);
        settle(what + " 1 member", live, partitions);
        Member m2 = b.get().start();
        live.add(m2);
        settle(what + " 2 members", live, partitions);
        Member m3 = staticMember.get().start();
        live.add(m3);
        settle(what + " 3 members", live, partitions);
        live.remove(m2);
        m2.stop();
        settle(what + " after a leave", live, partitions);
        live.remove(m3);
        m3.stop();
        Member m3b = staticMember.get().start();
        live.add(m3b);
        settle(what + " after a static restart", live, partitions);
        for (Member m : live) m.stop();
    }

    static void classic(String bootstrap, String group, String assignor) throws InterruptedException {
        Map<String, Object> p = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
            ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        Map<String, Object> s = new HashMap<>(p);
        s.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, group + "-static");
        joinLeaveRestart(group, 10,
            () -> new Member(bootstrap, group, group + "-a", p, topics(ORDERS, CLICKS)),
            () -> new Member(bootstrap, group, group + "-b", p, topics(ORDERS, CLICKS)),
            () -> new Member(bootstrap, group, group + "-s", s, topics(ORDERS, CLICKS)));
    }

    static void consumer(String bootstrap, String group) throws InterruptedException {
        Map<String, Object> p = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Map<String, Object> s = new HashMap<>(p);
        s.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, group + "-static");
        s.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range");
        Map<String, Object> u = new HashMap<>(p);
        u.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "uniform");
        joinLeaveRestart(group, 10,
            () -> new Member(bootstrap, group, group + "-a", u, topics(ORDERS, CLICKS)),
            () -> new Member(bootstrap, group, group + "-b", u, topics(ORDERS, CLICKS)),
            () -> new Member(bootstrap, group, group + "-s", s, topics(ORDERS, CLICKS)));
    }

    static void consumerRegex(String bootstrap, String group) throws InterruptedException {
        // A broker-side (RE2J) regex: the coordinator resolves it and writes record type 16.
        Map<String, Object> p = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Consumer<KafkaConsumer<byte[], byte[]>> regex =
            c -> c.subscribe(new SubscriptionPattern("capture-(orders|clicks)"));
        List<Member> live = new ArrayList<>();
        live.add(new Member(bootstrap, group, group + "-a", p, regex).start());
        settle(group + " 1 member", live, 10);
        Member b = new Member(bootstrap, group, group + "-b", p, regex).start();
        live.add(b);
        settle(group + " 2 members", live, 10);
        live.remove(b);
        b.stop();
        settle(group + " after a leave", live, 10);
        for (Member m : live) m.stop();
    }

    static void consumerMixed(String bootstrap, String group) throws InterruptedException {
        // A classic-protocol member in a consumer group: its member record carries the tagged
        // ClassicMemberMetadata with its JoinGroup protocols.
        Map<String, Object> modern = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Map<String, Object> classic = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
            ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        List<Member> live = new ArrayList<>();
        live.add(new Member(bootstrap, group, group + "-modern", modern, topics(ORDERS)).start());
        settle(group + " 1 member", live, 6);
        Member c = new Member(bootstrap, group, group + "-classic", classic, topics(ORDERS)).start();
        live.add(c);
        settle(group + " with a classic member", live, 6);
        live.remove(c);
        c.stop();
        settle(group + " after the classic member left", live, 6);
        for (Member m : live) m.stop();
    }

    static void consumerUpgrade(String bootstrap, String group) throws InterruptedException {
        // Online upgrade: a classic group that a consumer-protocol member joins is converted
        // (a GroupMetadata tombstone, then the consumer group's records); then downgraded when
        // the last consumer-protocol member leaves.
        Map<String, Object> classic = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
            ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        Map<String, Object> modern = props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        List<Member> live = new ArrayList<>();
        live.add(new Member(bootstrap, group, group + "-classic-a", classic, topics(CLICKS)).start());
        Member b = new Member(bootstrap, group, group + "-classic-b", classic, topics(CLICKS)).start();
        live.add(b);
        settle(group + " classic", live, 4);
        Member m = new Member(bootstrap, group, group + "-modern", modern, topics(CLICKS)).start();
        live.add(m);
        settle(group + " upgraded", live, 4);
        live.remove(m);
        m.stop();
        settle(group + " after the modern member left", live, 4);
        for (Member x : live) x.stop();
    }

    static void deleted(String bootstrap, String prefix) throws Exception {
        // Groups that end empty and are deleted: the broker's tombstones for every record kind.
        String classicGroup = prefix + "deleted-classic";
        String modernGroup = prefix + "deleted-consumer";
        Member a = new Member(bootstrap, classicGroup, classicGroup + "-a",
            props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"), topics(CLICKS)).start();
        Member b = new Member(bootstrap, modernGroup, modernGroup + "-a",
            props(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"), topics(CLICKS)).start();
        settle(classicGroup, List.of(a), 4);
        settle(modernGroup, List.of(b), 4);
        a.stop();
        b.stop();
        try (Admin admin = admin(bootstrap)) {
            for (int i = 0; i < 30; i++) {
                try {
                    admin.deleteConsumerGroups(List.of(classicGroup, modernGroup)).all().get(30, TimeUnit.SECONDS);
                    say("deleted " + classicGroup + " " + modernGroup);
                    return;
                } catch (java.util.concurrent.ExecutionException e) {
                    Thread.sleep(1000); // not empty yet: the leave is still being processed
                }
            }
            say("not deleted " + classicGroup + " " + modernGroup);
        }
    }

    // --- share groups ---------------------------------------------------------------------------------

    static void share(String bootstrap, String group) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        List<AtomicBoolean> flags = new ArrayList<>();
        for (String name : List.of("a", "b", "c")) {
            AtomicBoolean running = new AtomicBoolean(true);
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(SHARED));
                    long n = 0;
                    while (running.get()) {
                        n += c.poll(Duration.ofMillis(200)).count();
                    }
                    say("share " + name + " read " + n);
                } catch (RuntimeException e) {
                    say("share " + name + " failed: " + e);
                }
            }, "share-" + name);
            t.start();
            threads.add(t);
            flags.add(running);
            Thread.sleep(4000);
        }
        Thread.sleep(3000);
        for (int i = 0; i < threads.size(); i++) { // one by one: each leave is a new epoch
            flags.get(i).set(false);
            threads.get(i).join(30_000);
            Thread.sleep(2000);
        }
    }

    // --- Kafka Connect ----------------------------------------------------------------------------------

    static Map<String, String> workerProps(String bootstrap, String group) {
        Map<String, String> p = new HashMap<>();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("listeners", "http://127.0.0.1:0");
        p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("config.storage.topic", group + "-configs");
        p.put("offset.storage.topic", group + "-offsets");
        p.put("status.storage.topic", group + "-status");
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("offset.storage.partitions", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("status.storage.partitions", "1");
        p.put("offset.flush.interval.ms", "1000");
        p.put("plugin.discovery", "service_load");
        p.put("scheduled.rebalance.max.delay.ms", "3000");
        return p;
    }

    static void connect(String bootstrap, String group, Path work) throws Exception {
        Connect<DistributedHerder> w1 = new ConnectDistributed().startConnect(workerProps(bootstrap, group));
        say("connect worker 1 started");
        Map<String, String> connector = new HashMap<>();
        connector.put("name", group + "-sink");
        connector.put("connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector");
        connector.put("tasks.max", "2");
        connector.put("topics", SINK_IN);
        connector.put("file", work.resolve("connect-sink.txt").toString());
        putConnector(w1.herder(), group + "-sink", connector);
        Thread.sleep(8000);
        Connect<DistributedHerder> w2 = new ConnectDistributed().startConnect(workerProps(bootstrap, group));
        say("connect worker 2 started");
        Thread.sleep(12000); // the join, and the incremental cooperative follow-up after its delay
        w2.stop();
        w2.awaitStop();
        say("connect worker 2 stopped");
        Thread.sleep(8000);
        long lines = Files.exists(work.resolve("connect-sink.txt"))
            ? Files.readAllLines(work.resolve("connect-sink.txt"), StandardCharsets.UTF_8).size() : 0;
        say("connect sink wrote " + lines + " lines");
        w1.stop();
        w1.awaitStop();
        say("connect worker 1 stopped");
    }

    static void putConnector(Herder herder, String name, Map<String, String> config) throws Exception {
        String lastError = null;
        for (int i = 0; i < 30; i++) {
            FutureCallback<Herder.Created<ConnectorInfo>> cb = new FutureCallback<>();
            herder.putConnectorConfig(name, config, true, cb);
            try {
                cb.get(30, TimeUnit.SECONDS);
                say("connector " + name + " created");
                return;
            } catch (java.util.concurrent.ExecutionException e) {
                // the worker has not joined its group yet (no leader to write the config)
                lastError = String.valueOf(e.getCause());
                Thread.sleep(1000);
            }
        }
        say("connector " + name + " not created: " + lastError);
    }
}
