package groupwatch.oracle;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;

/**
 * Which owned partitions Kafka's StickyAssignor / CooperativeStickyAssignor counts as valid, read by
 * their own {@code AbstractStickyAssignor.allSubscriptionsEqual} (private: called by reflection), the
 * step both the constrained and the general builder start from.
 *
 * <p>One case per stdin line, one JSON answer per stdout line. Tokens (strings {@code s}+percent-encoded):
 * <pre>
 *   protocol nTopics { topic count }
 *   nMembers { memberId subscriptionVersion generationId userData userDataGeneration
 *              nTopics topic... nOwned { topic partition }... nPrevious { topic partition }... }
 * </pre>
 * {@code userData} is one of {@code none} (null), {@code sticky0}/{@code sticky1} (StickyAssignor user
 * data V0 / V1 listing the {@code previous} partitions, V1 with {@code userDataGeneration}), {@code coop}
 * (CooperativeStickyAssignor's 4-byte generation) or {@code raw} (two bytes neither reads). Each
 * subscription is serialized at {@code subscriptionVersion} and read back, as the leader receives it, and
 * the members go into a HashMap in order, as ConsumerCoordinator fills it.
 *
 * <p>Answer: {@code {"equal": b, "max_generation": n, "owned": {member: [[topic, p], ...]},
 * "several": [[topic, p], ...]}} or {@code {"error": "..."}}.
 */
public final class ClaimsOracle {
    private ClaimsOracle() {}

    public static void main(String[] args) throws Exception {
        Configurator.setRootLevel(Level.OFF);
        Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        System.setOut(System.err);
        Method read = AbstractStickyAssignor.class.getDeclaredMethod(
                "allSubscriptionsEqual", Set.class, Map.class, Map.class, Set.class);
        read.setAccessible(true);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            StringBuilder result = new StringBuilder();
            try {
                run(read, line.trim().split(" "), result);
            } catch (Exception e) {
                Throwable cause = e instanceof InvocationTargetException ? e.getCause() : e;
                result.setLength(0);
                result.append("{\"error\":");
                Wire.quote(result, cause.getClass().getName() + ": " + cause.getMessage());
                result.append('}');
            }
            out.write(result.toString());
            out.write('\n');
            out.flush();
        }
    }

    private static int pos;

    private static String str(String[] t) {
        String s = t[pos++];
        return URLDecoder.decode(s.substring(1), StandardCharsets.UTF_8);
    }

    private static int num(String[] t) {
        return Integer.parseInt(t[pos++]);
    }

    private static List<TopicPartition> partitions(String[] t) {
        int n = num(t);
        List<TopicPartition> list = new ArrayList<>(n);
        for (int k = 0; k < n; k++) {
            String topic = str(t);
            list.add(new TopicPartition(topic, num(t)));
        }
        return list;
    }

    private static void run(Method read, String[] t, StringBuilder out) throws Exception {
        pos = 0;
        String protocol = str(t);
        int nTopics = num(t);
        Set<String> withPartitions = new HashSet<>();
        for (int i = 0; i < nTopics; i++) {
            String topic = str(t);
            if (num(t) > 0) {
                withPartitions.add(topic);
            }
        }
        // AbstractPartitionAssignor.assign: partitionsPerTopic holds the subscribed topics with metadata
        Set<String> allTopics = new HashSet<>();
        int nMembers = num(t);
        List<String> order = new ArrayList<>();
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int i = 0; i < nMembers; i++) {
            String id = str(t);
            short version = (short) num(t);
            int generationId = num(t);
            String userData = t[pos++];
            int userDataGeneration = num(t);
            int nSub = num(t);
            List<String> topics = new ArrayList<>();
            for (int k = 0; k < nSub; k++) {
                topics.add(str(t));
            }
            List<TopicPartition> owned = partitions(t);
            List<TopicPartition> previous = partitions(t);
            ByteBuffer bytes = userData(userData, previous, userDataGeneration);
            Subscription built = new Subscription(topics, bytes, owned, generationId, Optional.empty());
            subscriptions.put(id, ConsumerProtocol.deserializeSubscription(
                    ConsumerProtocol.serializeSubscription(built, version)));
            order.add(id);
            for (String topic : topics) {
                if (withPartitions.contains(topic)) {
                    allTopics.add(topic);
                }
            }
        }
        AbstractStickyAssignor assignor = "sticky".equals(protocol)
                ? new StickyAssignor() : new CooperativeStickyAssignor();
        Map<String, List<TopicPartition>> owned = new HashMap<>();
        Set<TopicPartition> several = new HashSet<>();
        boolean equal = (Boolean) read.invoke(assignor, allTopics, subscriptions, owned, several);
        out.append("{\"equal\":").append(equal).append(",\"max_generation\":").append(assignor.maxGeneration());
        out.append(",\"owned\":{");
        boolean first = true;
        for (String id : order) {
            if (!first) {
                out.append(',');
            }
            first = false;
            Wire.quote(out, id);
            out.append(':');
            list(out, owned.getOrDefault(id, List.of()));
        }
        out.append("},\"several\":");
        list(out, new ArrayList<>(several));
        out.append('}');
    }

    private static ByteBuffer userData(String kind, List<TopicPartition> previous, int generation) {
        switch (kind) {
            case "none":
                return null;
            case "coop":
                return ByteBuffer.allocate(4).putInt(0, generation);
            case "raw":
                return ByteBuffer.wrap(new byte[] {0x7f, 0x01});
            case "sticky0":
            case "sticky1":
                return Wire.stickyUserData(previous, "sticky1".equals(kind) ? generation : null);
            default:
                throw new IllegalArgumentException("unknown user data " + kind);
        }
    }

    private static void list(StringBuilder out, List<TopicPartition> partitions) {
        out.append('[');
        boolean first = true;
        for (TopicPartition tp : partitions) {
            if (!first) {
                out.append(',');
            }
            first = false;
            out.append('[');
            Wire.quote(out, tp.topic());
            out.append(',').append(tp.partition()).append(']');
        }
        out.append(']');
    }
}
