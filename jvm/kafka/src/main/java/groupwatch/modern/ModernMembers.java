package groupwatch.modern;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Members of KIP-848 consumer groups (and of classic groups about to be upgraded) with Kafka's
 * own Java client, driven line by line on stdin, for the modern-group tests (tests/modern).
 *
 * <p>Where {@code groupwatch.demo.GroupMembers} takes a topic list, this host also subscribes by
 * pattern, either resolved by the client ({@code subscribe(java.util.regex.Pattern)}) or by the
 * broker ({@code subscribe(SubscriptionPattern)}, which makes the coordinator write
 * ConsumerGroupRegularExpression records), and it reports each member's member id, so a test can
 * find a member's own records in {@code __consumer_offsets}.
 *
 * <pre>
 * join NAME GROUP SUBSCRIPTION [protocol=consumer|classic] [assignor=NAME] [instance=ID] [maxpoll=MS]
 *     SUBSCRIPTION is topics=T1,T2 | pattern=REGEX (client-side) | regex=RE2J (broker-side);
 *     with protocol=consumer (the default) ASSIGNOR names the broker's assignor (uniform, range),
 *     with protocol=classic the client's (range, cooperative-sticky, ...)
 * leave NAME          close it: a dynamic member leaves, a static one leaves as static
 *                     (MemberEpoch -2 under the consumer protocol), so a restart under the same
 *                     instance id takes its place
 * stall NAME MILLIS   stop polling that long, then resume
 * quit                close everything and exit
 * </pre>
 * Output lines: {@code ok COMMAND} once a command is done, {@code assigned NAME t-p,...} at every
 * assignment change (sorted), {@code member NAME MEMBER_ID} when the member id changes,
 * {@code note NAME ...} for refused commits (a commit racing a rebalance), {@code error NAME ...}
 * when a member's loop fails.
 */
public final class ModernMembers {
    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    private ModernMembers() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            try {
                switch (w[0]) {
                    case "join" -> join(bootstrap, w);
                    case "leave" -> MEMBERS.remove(w[1]).close();
                    case "stall" -> MEMBERS.get(w[1]).stallUntil.set(System.currentTimeMillis() + Long.parseLong(w[2]));
                    case "quit" -> {
                        for (Member m : MEMBERS.values()) {
                            m.close();
                        }
                        say("bye");
                        System.exit(0);
                    }
                    default -> say("error host unknown command " + w[0]);
                }
            } catch (RuntimeException e) {
                say("error host " + line + ": " + e);
            }
            say("ok " + w[0]);
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void join(String bootstrap, String[] w) {
        String name = w[1];
        String group = w[2];
        String subscription = w[3];
        String protocol = "consumer";
        String assignor = null;
        String instance = null;
        String maxPoll = null;
        for (int i = 4; i < w.length; i++) {
            String[] kv = w[i].split("=", 2);
            switch (kv[0]) {
                case "protocol" -> protocol = kv[1];
                case "assignor" -> assignor = kv[1];
                case "instance" -> instance = kv[1];
                case "maxpoll" -> maxPoll = kv[1];
                default -> throw new IllegalArgumentException("unknown option " + w[i]);
            }
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("consumer")) {
            // KIP-848: the broker assigns; session and heartbeat timing are the broker's (the
            // client refuses those settings under this protocol).
            if (assignor != null) {
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            }
        } else {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(assignor));
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        if (maxPoll != null) {
            // Under the consumer protocol this is also the member's rebalance timeout.
            p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, maxPoll);
        }
        if (subscription.startsWith("pattern=")) {
            // A client-side pattern is matched against the client's metadata: refresh it often
            // enough that a topic created later is found within seconds (default: 5 minutes).
            p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
        }
        if (instance != null) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        Member m = new Member(name, p, subscription);
        MEMBERS.put(name, m);
        m.thread.start();
    }

    private static String assignorClass(String name) {
        return switch (name == null ? "range" : name) {
            case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky" -> "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default -> throw new IllegalArgumentException("unknown assignor " + name);
        };
    }

    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Thread thread;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicLong stallUntil = new AtomicLong(0);
        final TreeSet<String> owned = new TreeSet<>();
        String memberId = "";

        Member(String name, Properties p, String subscription) {
            this.name = name;
            consumer = new KafkaConsumer<>(p);
            String[] kv = subscription.split("=", 2);
            switch (kv[0]) {
                case "topics" -> consumer.subscribe(List.of(kv[1].split(",")), this);
                case "pattern" -> consumer.subscribe(Pattern.compile(kv[1]), this);
                case "regex" -> consumer.subscribe(new SubscriptionPattern(kv[1]), this);
                default -> throw new IllegalArgumentException("unknown subscription " + subscription);
            }
            thread = new Thread(this::loop, "member-" + name);
            thread.setDaemon(true);
        }

        void loop() {
            try {
                while (running.get()) {
                    if (System.currentTimeMillis() < stallUntil.get()) {
                        // Not polling: past max.poll.interval.ms the member is out of the group.
                        Thread.sleep(100);
                        continue;
                    }
                    boolean fetched = !consumer.poll(Duration.ofMillis(200)).isEmpty();
                    reportMemberId();
                    if (fetched) {
                        try {
                            consumer.commitSync(Duration.ofSeconds(10));
                        } catch (RuntimeException e) {
                            if (e instanceof InterruptException) {
                                throw e;
                            }
                            // a commit racing a rebalance is refused; the next one goes through
                            say("note " + name + " commit refused: " + e.getClass().getSimpleName());
                        }
                    }
                }
            } catch (InterruptedException | InterruptException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                say("error " + name + " " + e);
            }
        }

        private void reportMemberId() {
            String id = consumer.groupMetadata().memberId();
            if (id != null && !id.isEmpty() && !id.equals(memberId)) {
                memberId = id;
                say("member " + name + " " + id);
            }
        }

        void close() throws InterruptedException {
            running.set(false);
            stallUntil.set(0);
            thread.join(30_000);
            // DEFAULT: a dynamic member leaves the group; a static one stays in it (MemberEpoch -2
            // under the consumer protocol) until its instance id comes back or its session ends.
            consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.DEFAULT)
                .withTimeout(Duration.ofSeconds(10)));
        }

        private void report() {
            say("assigned " + name + " " + String.join(",", owned));
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
}
