package groupwatch.demo;

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

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Real consumer-group members with Kafka's own Java client, driven line by line on stdin, so
 * tests and the demo can make groups of any assignor (including cooperative-sticky, which only
 * the Java client speaks) join, leave, stall past their poll interval and rejoin.
 *
 * <pre>
 * join NAME GROUP TOPICS ASSIGNOR [instance=ID] [protocol=consumer]
 *                                                 start a member (TOPICS comma separated); with
 *                                                 protocol=consumer (KIP-848) ASSIGNOR names the
 *                                                 broker's assignor (uniform, range)
 * leave NAME                                      close it (a clean LeaveGroup)
 * stall NAME MILLIS                               stop polling that long, then resume
 * kill NAME                                       stop polling for good, without leaving
 * quit                                            close everything and exit
 * </pre>
 * Every assignment change prints {@code assigned NAME p0,p1,...} (topic-partitions sorted).
 */
public final class GroupMembers {
    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    private GroupMembers() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            switch (w[0]) {
                case "join" -> {
                    String instance = null;
                    String protocol = "classic";
                    for (int i = 5; i < w.length; i++) {
                        if (w[i].startsWith("instance=")) {
                            instance = w[i].substring(9);
                        } else if (w[i].startsWith("protocol=")) {
                            protocol = w[i].substring(9);
                        }
                    }
                    Member m = new Member(bootstrap, w[1], w[2], List.of(w[3].split(",")), w[4], instance, protocol);
                    MEMBERS.put(w[1], m);
                    m.thread.start();
                }
                case "leave" -> MEMBERS.remove(w[1]).close();
                case "stall" -> MEMBERS.get(w[1]).stallUntil.set(System.currentTimeMillis() + Long.parseLong(w[2]));
                case "kill" -> MEMBERS.get(w[1]).stallUntil.set(Long.MAX_VALUE);
                case "quit" -> {
                    for (Member m : MEMBERS.values()) {
                        m.close();
                    }
                    System.out.println("bye");
                    System.out.flush();
                    System.exit(0);
                }
                default -> System.out.println("error unknown command " + w[0]);
            }
            System.out.println("ok " + w[0]);
            System.out.flush();
        }
    }

    private static String assignorClass(String name) {
        return switch (name) {
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

        Member(String bootstrap, String name, String group, List<String> topics, String assignor, String instance,
                String protocol) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            if (protocol.equals("consumer")) {
                // KIP-848: the broker assigns, and session and heartbeat timing are the
                // broker's (the client refuses those settings under this protocol).
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            } else {
                // The classic protocol: its assignments are what GroupMetadataValue records carry.
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(assignor));
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
            }
            // Short enough that a stalled member is kicked out within seconds.
            p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "5000");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            if (instance != null) {
                p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
            }
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(topics, this);
            thread = new Thread(this::loop, "member-" + name);
            thread.setDaemon(true);
        }

        void loop() {
            try {
                while (running.get()) {
                    long until = stallUntil.get();
                    if (System.currentTimeMillis() < until) {
                        Thread.sleep(100);
                        continue;
                    }
                    if (!consumer.poll(Duration.ofMillis(200)).isEmpty()) {
                        consumer.commitSync();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                System.out.println("error " + name + " " + e);
                System.out.flush();
            }
        }

        void close() throws InterruptedException {
            running.set(false);
            stallUntil.set(0);
            thread.join(30_000);
            consumer.close(Duration.ofSeconds(10));
        }

        private void report() {
            System.out.println("assigned " + name + " " + String.join(",", owned));
            System.out.flush();
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
