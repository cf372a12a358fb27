package groupwatch.legacy;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Group members of an old release of Kafka's Java client, driven line by line on stdin. It
 * compiles against kafka-clients 2.2.2 and uses nothing newer (no groupMetadata(), no
 * onPartitionsLost, no CloseOptions), so one jar runs on the classpath of any release since.
 *
 * <pre>
 * join NAME GROUP TOPICS ASSIGNOR [KEY=VALUE ...]
 *     start a member; ASSIGNOR is range, roundrobin, sticky or cooperative-sticky; the options:
 *     instance=ID (group.instance.id), max.poll=MS (max.poll.interval.ms), session=MS
 *     (session.timeout.ms), poll=MS (the poll timeout), pace=MS (time spent on each poll's
 *     result: a slow application)
 * pace NAME MILLIS   from now on spend that long after every poll (0: none)
 * stall NAME MILLIS  stop polling that long, then resume
 * kill NAME          stop polling for good, without leaving
 * leave NAME         close the member (it leaves the group)
 * quit               close every member and exit
 * </pre>
 * Output lines, as groupwatch.members.MemberHost writes them: {@code ok COMMAND} once a command
 * is done, {@code assigned NAME t-p,...} (sorted) at every change of what the member owns,
 * {@code fetched NAME t-p} the first time records of a partition arrive after it was assigned,
 * {@code note NAME ...} for a refused commit and {@code error NAME ...} for an exception out of
 * poll: the member reports it and polls again 100 ms later, as a long-running application does.
 */
public final class LegacyMembers {
    private static final Map<String, LegacyMember> MEMBERS = new ConcurrentHashMap<>();

    private LegacyMembers() {}

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
                    case "join":
                        LegacyMember m = new LegacyMember(bootstrap, w);
                        MEMBERS.put(m.name, m);
                        m.thread.start();
                        break;
                    case "pace":
                        MEMBERS.get(w[1]).pace.set(Long.parseLong(w[2]));
                        break;
                    case "stall":
                        MEMBERS.get(w[1]).stallUntil.set(System.currentTimeMillis() + Long.parseLong(w[2]));
                        break;
                    case "kill":
                        MEMBERS.get(w[1]).stallUntil.set(Long.MAX_VALUE);
                        break;
                    case "leave":
                        MEMBERS.remove(w[1]).close();
                        break;
                    case "quit":
                        for (LegacyMember each : MEMBERS.values()) {
                            each.close();
                        }
                        say("bye");
                        System.exit(0);
                        break;
                    default:
                        say("error host unknown command " + w[0]);
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

    private static String assignorClass(String name) {
        switch (name) {
            case "range":
                return "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin":
                return "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky":
                return "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky":
                // By name: the class exists from 2.4 on, not in the release this compiles against.
                return "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    private static final class LegacyMember implements ConsumerRebalanceListener {
        final String name;
        final Thread thread;
        final AtomicLong stallUntil = new AtomicLong(0);
        final AtomicLong pace = new AtomicLong(0);
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final long pollMillis;
        private final TreeSet<String> owned = new TreeSet<>();
        private final Set<String> fetched = new HashSet<>();

        LegacyMember(String bootstrap, String[] w) {
            name = w[1];
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", w[2]);
            p.put("client.id", name);
            p.put("auto.offset.reset", "earliest");
            p.put("enable.auto.commit", "false");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            p.put("partition.assignment.strategy", assignorClass(w[4]));
            long session = 6000;
            long maxPoll = 300000;
            long poll = 200;
            for (int i = 5; i < w.length; i++) {
                String[] kv = w[i].split("=", 2);
                switch (kv[0]) {
                    case "instance":
                        p.put("group.instance.id", kv[1]);
                        break;
                    case "max.poll":
                        maxPoll = Long.parseLong(kv[1]);
                        break;
                    case "session":
                        session = Long.parseLong(kv[1]);
                        break;
                    case "poll":
                        poll = Long.parseLong(kv[1]);
                        break;
                    case "pace":
                        pace.set(Long.parseLong(kv[1]));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown option " + w[i]);
                }
            }
            p.put("session.timeout.ms", Long.toString(session));
            p.put("heartbeat.interval.ms", Long.toString(Math.min(1000, session / 3)));
            p.put("max.poll.interval.ms", Long.toString(maxPoll));
            pollMillis = poll;
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(Arrays.asList(w[3].split(",")), this);
            thread = new Thread(this::loop, "member-" + name);
            thread.setDaemon(true);
        }

        private void loop() {
            while (running.get()) {
                try {
                    if (System.currentTimeMillis() < stallUntil.get()) {
                        Thread.sleep(50);
                        continue;
                    }
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(pollMillis));
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        String tp = r.topic() + "-" + r.partition();
                        if (fetched.add(tp)) {
                            say("fetched " + name + " " + tp);
                        }
                    }
                    if (!records.isEmpty()) {
                        commit();
                    }
                    long p = pace.get();
                    if (p > 0) {
                        Thread.sleep(p);
                    }
                } catch (InterruptedException | InterruptException | WakeupException e) {
                    return;
                } catch (RuntimeException e) {
                    say("error " + name + " " + e);
                    // An application's retry pause: a failure that repeats at once (a leader whose
                    // assignor throws on every poll) would otherwise flood the output.
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException stop) {
                        return;
                    }
                }
            }
        }

        private void commit() {
            try {
                consumer.commitSync(Duration.ofSeconds(10));
            } catch (InterruptException e) {
                throw e;
            } catch (RuntimeException e) {
                say("note " + name + " commit refused: " + e.getClass().getSimpleName());
            }
        }

        void close() {
            running.set(false);
            stallUntil.set(0);
            try {
                thread.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            consumer.close(Duration.ofSeconds(10));
        }

        private static List<String> names(Collection<TopicPartition> tps) {
            List<String> out = new ArrayList<>();
            for (TopicPartition tp : tps) {
                out.add(tp.topic() + "-" + tp.partition());
            }
            return out;
        }

        private void report() {
            say("assigned " + name + " " + String.join(",", owned));
        }

        // Eager releases revoke everything and then assign the whole new set; cooperative ones
        // revoke and add only what changes (3.0 also reports lost partitions here, the default
        // of the onPartitionsLost this release lacks). Kept as a set, it is right for both.
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            List<String> gone = names(partitions);
            owned.removeAll(gone);
            fetched.removeAll(gone);
            report();
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            List<String> added = names(partitions);
            owned.addAll(added);
            fetched.removeAll(added);
            report();
        }
    }
}
