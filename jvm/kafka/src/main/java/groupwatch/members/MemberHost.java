package groupwatch.members;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One JVM hosting any number of group {@link Member}s, driven line by line on stdin. The host
 * itself knows every command but {@code join}, whose words each host reads its own way:
 *
 * <pre>
 * join NAME GROUP ...   start a member (see the host's main class)
 * leave NAME            close it: a dynamic member leaves, a static one leaves as static
 * stall NAME MILLIS     stop polling that long, then resume
 * kill NAME             stop polling for good, without leaving
 * quit                  close everything and exit
 * </pre>
 * Output lines: {@code ok COMMAND} once a command is done (also after a failed one),
 * {@code assigned NAME t-p,...} at every assignment change, {@code member NAME MEMBER_ID} when
 * the member id changes, {@code note NAME ...} for refused commits (a commit racing a rebalance),
 * {@code error NAME ...} when a member's loop fails and {@code error host ...} when a command does.
 */
public final class MemberHost {
    /** Makes the member a {@code join} command's words ({@code words[0]} is "join") describe. */
    @FunctionalInterface
    public interface Join {
        Member member(String bootstrap, String[] words);
    }

    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    private MemberHost() {}

    /** Runs the commands on stdin until {@code quit} or the end of the input. */
    public static void run(String bootstrap, Join join) throws IOException, InterruptedException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            try {
                switch (w[0]) {
                    case "join" -> {
                        Member m = join.member(bootstrap, w);
                        MEMBERS.put(m.name(), m);
                        m.start();
                    }
                    case "leave" -> MEMBERS.remove(w[1]).close();
                    case "stall" -> MEMBERS.get(w[1]).stall(Long.parseLong(w[2]));
                    case "kill" -> MEMBERS.get(w[1]).kill();
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

    /** One line on the host's output, never interleaved with another member's. */
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** What every member's consumer is: earliest offsets, manual commits, raw bytes. */
    public static Properties consumerConfig(String bootstrap, String group, String name) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    /**
     * The group protocol and its assignor: under {@code consumer} (KIP-848) {@code assignor}
     * names the broker's assignor (uniform, range; the broker's default when null), under
     * {@code classic} the client's (range when null, roundrobin, sticky, cooperative-sticky).
     */
    public static void groupProtocol(Properties p, String protocol, String assignor) {
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("consumer")) {
            // KIP-848: the broker assigns; session and heartbeat timing are the broker's (the
            // client refuses those settings under this protocol).
            if (assignor != null) {
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            }
        } else {
            // The classic protocol: its assignments are what GroupMetadataValue records carry.
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, classicAssignor(assignor));
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
    }

    private static String classicAssignor(String name) {
        return switch (name == null ? "range" : name) {
            case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky" -> "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default -> throw new IllegalArgumentException("unknown assignor " + name);
        };
    }
}
