package groupwatch.demo;

import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;

import groupwatch.members.Member;
import groupwatch.members.MemberHost;

/**
 * Real consumer-group members with Kafka's own Java client, driven line by line on stdin, so
 * tests and the demo can make groups of any assignor (including cooperative-sticky, which only
 * the Java client speaks) join, leave, stall past their poll interval and rejoin.
 *
 * <pre>
 * join NAME GROUP TOPICS ASSIGNOR [instance=ID] [protocol=consumer] [release=fail|delay:MS]
 *     start a member (TOPICS comma separated); with protocol=consumer (KIP-848) ASSIGNOR names
 *     the broker's assignor (uniform, range); with release=... the classic member assigns with
 *     {@link ReleaseAssignor} (range, failing every time or slow) and, as an application that
 *     catches a failed poll and polls again, keeps polling after one
 * </pre>
 * and the commands and output lines of {@link MemberHost} (leave, stall, kill, quit).
 */
public final class GroupMembers {
    private GroupMembers() {}

    public static void main(String[] args) throws Exception {
        MemberHost.run(args[0], GroupMembers::join);
    }

    private static Member join(String bootstrap, String[] w) {
        String instance = null;
        String protocol = "classic";
        String release = null;
        for (int i = 5; i < w.length; i++) {
            if (w[i].startsWith("instance=")) {
                instance = w[i].substring(9);
            } else if (w[i].startsWith("protocol=")) {
                protocol = w[i].substring(9);
            } else if (w[i].startsWith("release=")) {
                release = w[i].substring(8);
            }
        }
        Properties p = MemberHost.consumerConfig(bootstrap, w[2], w[1]);
        MemberHost.groupProtocol(p, protocol, w[4]);
        // Short enough that a stalled member is kicked out within seconds.
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "5000");
        if (instance != null) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        if (release != null) {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, ReleaseAssignor.class.getName());
            if (release.equals("fail")) {
                p.put(ReleaseAssignor.FAIL, "true");
            } else if (release.startsWith("delay:")) {
                p.put(ReleaseAssignor.DELAY_MS, release.substring(6));
            }
        }
        List<String> topics = List.of(w[3].split(","));
        return new Member(
            w[1], p, (consumer, listener) -> consumer.subscribe(topics, listener), release != null);
    }
}
