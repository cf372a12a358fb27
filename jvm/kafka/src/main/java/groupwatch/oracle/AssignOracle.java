package groupwatch.oracle;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;

/**
 * Runs Kafka's own StickyAssignor / CooperativeStickyAssignor on groupwatch's assignor input.
 *
 * <p>Streaming: one case per stdin line, one JSON result per stdout line. The case is a flat list of
 * space-separated tokens written by {@code groupwatch.assignor.oracle} (strings are {@code s}+percent-encoded,
 * {@code n} is null):
 * <pre>
 *   protocol warmup quiet
 *   nTopics { topic count hasRacks [ per partition: nReplicas rack... ] }
 *   nMembers { memberId generation|n rack|n nTopics topic... nOwned { topic partition }... }
 * </pre>
 * Result: {@code {"path": "constrained"|"general", "nanos": n, "assignment": {member: [[topic, p], ...]},
 * "unassigned": [[topic, p], ...]}} (assignment lists in Kafka's order; "unassigned" = subscribed
 * partitions nobody got, i.e. the cooperative protocol's withheld partitions), or {@code {"error": "..."}}.
 * With quiet = 1 only path and nanos are printed (benchmarks).
 *
 * <p>Each member's Subscription is built the way a 4.x client builds it and then sent through
 * ConsumerProtocol's wire format, so the assignor sees what a real leader sees: for sticky, the previous
 * assignment and generation in StickyAssignor's V1 user data (null user data when the member has neither);
 * for cooperative-sticky, the generation as 4 bytes of user data; for both the owned partitions, the
 * subscription generationId and the rack. The leader's map is a HashMap filled in member order, as
 * ConsumerCoordinator.onLeaderElected fills it from the JoinGroup response.
 */
public final class AssignOracle {
    private AssignOracle() {}

    private static final class Member {
        String id;
        boolean hasGeneration;
        int generation;
        Optional<String> rack;
        List<String> topics;
        List<TopicPartition> owned;
    }

    private static final class Tokens {
        private final String[] items;
        private int pos;

        Tokens(String line) {
            this.items = line.trim().split(" ");
        }

        String raw() {
            return items[pos++];
        }

        int integer() {
            return Integer.parseInt(raw());
        }

        String string() {
            String t = raw();
            if (t.equals("n")) {
                return null;
            }
            return URLDecoder.decode(t.substring(1), StandardCharsets.UTF_8);
        }
    }

    public static void main(String[] args) throws Exception {
        Configurator.setRootLevel(Level.OFF);
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            StringBuilder result = new StringBuilder();
            try {
                run(new Tokens(line), result);
            } catch (Exception | StackOverflowError e) {
                result.setLength(0);
                result.append("{\"error\":");
                Wire.quote(result, e.getClass().getName() + ": " + e.getMessage());
                result.append('}');
            }
            out.write(result.toString());
            out.write('\n');
            out.flush();
        }
    }

    private static void run(Tokens in, StringBuilder out) {
        String protocol = in.string();
        int warmup = in.integer();
        boolean quiet = in.integer() != 0;

        Node rackless = new Node(0, "broker-0", 9092);
        List<Node> nodes = new ArrayList<>();
        nodes.add(rackless);
        Map<String, Node> nodeByRack = new HashMap<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        int nTopics = in.integer();
        for (int t = 0; t < nTopics; t++) {
            String topic = in.string();
            int count = in.integer();
            boolean hasRacks = in.integer() != 0;
            for (int p = 0; p < count; p++) {
                List<Node> replicas = new ArrayList<>();
                if (hasRacks) {
                    int nReplicas = in.integer();
                    for (int r = 0; r < nReplicas; r++) {
                        String rack = in.string();
                        if (rack == null) {
                            replicas.add(rackless);
                        } else {
                            replicas.add(nodeByRack.computeIfAbsent(rack, name -> {
                                Node n = new Node(nodes.size(), "broker-" + nodes.size(), 9092, name);
                                nodes.add(n);
                                return n;
                            }));
                        }
                    }
                }
                if (replicas.isEmpty()) {
                    replicas.add(rackless);
                }
                Node[] array = replicas.toArray(new Node[0]);
                partitions.add(new PartitionInfo(topic, p, array[0], array, array));
            }
        }
        Cluster cluster = new Cluster("groupwatch", nodes, partitions, Collections.emptySet(), Collections.emptySet());

        int nMembers = in.integer();
        List<Member> members = new ArrayList<>(nMembers);
        for (int i = 0; i < nMembers; i++) {
            Member m = new Member();
            m.id = in.string();
            String gen = in.raw();
            m.hasGeneration = !gen.equals("n");
            m.generation = m.hasGeneration ? Integer.parseInt(gen) : AbstractStickyAssignor.DEFAULT_GENERATION;
            m.rack = Optional.ofNullable(in.string());
            int nSub = in.integer();
            Set<String> topics = new LinkedHashSet<>();
            for (int k = 0; k < nSub; k++) {
                topics.add(in.string());
            }
            m.topics = new ArrayList<>(topics);
            int nOwned = in.integer();
            m.owned = new ArrayList<>(nOwned);
            for (int k = 0; k < nOwned; k++) {
                String topic = in.string();
                m.owned.add(new TopicPartition(topic, in.integer()));
            }
            members.add(m);
        }

        for (int i = 0; i < warmup; i++) {
            newAssignor(protocol).assign(cluster, new GroupSubscription(subscriptions(protocol, members)));
        }
        AbstractStickyAssignor assignor = newAssignor(protocol);
        GroupSubscription group = new GroupSubscription(subscriptions(protocol, members));
        long start = System.nanoTime();
        GroupAssignment assignment = assignor.assign(cluster, group);
        long nanos = System.nanoTime() - start;

        out.append("{\"path\":\"").append(assignor.partitionsTransferringOwnership() == null ? "general" : "constrained");
        out.append("\",\"nanos\":").append(nanos);
        if (quiet) {
            out.append('}');
            return;
        }
        out.append(",\"assignment\":{");
        Set<TopicPartition> assigned = new HashSet<>();
        boolean firstMember = true;
        for (Member m : members) {
            if (!firstMember) {
                out.append(',');
            }
            firstMember = false;
            Wire.quote(out, m.id);
            out.append(":[");
            Assignment a = assignment.groupAssignment().get(m.id);
            if (a != null) {
                boolean first = true;
                for (TopicPartition tp : a.partitions()) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    out.append('[');
                    Wire.quote(out, tp.topic());
                    out.append(',').append(tp.partition()).append(']');
                    assigned.add(tp);
                }
            }
            out.append(']');
        }
        out.append("},\"unassigned\":[");
        Set<String> subscribed = new LinkedHashSet<>();
        members.forEach(m -> subscribed.addAll(m.topics));
        List<String> topics = new ArrayList<>(subscribed);
        Collections.sort(topics);
        boolean first = true;
        for (String topic : topics) {
            for (PartitionInfo p : cluster.partitionsForTopic(topic)) {
                if (!assigned.contains(new TopicPartition(topic, p.partition()))) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    out.append('[');
                    Wire.quote(out, topic);
                    out.append(',').append(p.partition()).append(']');
                }
            }
        }
        out.append("]}");
    }

    private static AbstractStickyAssignor newAssignor(String protocol) {
        switch (protocol) {
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new IllegalArgumentException("unknown protocol " + protocol);
        }
    }

    private static Map<String, Subscription> subscriptions(String protocol, List<Member> members) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (Member m : members) {
            ByteBuffer userData;
            if ("sticky".equals(protocol)) {
                userData = m.hasGeneration || !m.owned.isEmpty() ? Wire.stickyUserData(m.owned, m.generation) : null;
            } else {
                userData = ByteBuffer.allocate(4).putInt(0, m.generation);
            }
            Subscription built = new Subscription(m.topics, userData, m.owned, m.generation, m.rack);
            subscriptions.put(m.id, ConsumerProtocol.deserializeSubscription(ConsumerProtocol.serializeSubscription(built)));
        }
        return subscriptions;
    }
}
