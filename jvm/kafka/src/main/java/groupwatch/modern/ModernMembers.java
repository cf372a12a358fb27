package groupwatch.modern;

import java.util.List;
import java.util.Properties;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.SubscriptionPattern;

import groupwatch.members.Member;
import groupwatch.members.MemberHost;

/**
 * Members of KIP-848 consumer groups (and of classic groups about to be upgraded) with Kafka's
 * own Java client, driven line by line on stdin, for the modern-group tests (tests/modern).
 *
 * <p>Where {@code groupwatch.demo.GroupMembers} takes a topic list, this host also subscribes by
 * pattern, either resolved by the client ({@code subscribe(java.util.regex.Pattern)}) or by the
 * broker ({@code subscribe(SubscriptionPattern)}, which makes the coordinator write
 * ConsumerGroupRegularExpression records). Every member reports its member id, so a test can
 * find a member's own records in {@code __consumer_offsets}.
 *
 * <pre>
 * join NAME GROUP SUBSCRIPTION [protocol=consumer|classic] [assignor=NAME] [instance=ID] [maxpoll=MS]
 *     SUBSCRIPTION is topics=T1,T2 | pattern=REGEX (client-side) | regex=RE2J (broker-side);
 *     with protocol=consumer (the default) ASSIGNOR names the broker's assignor (uniform, range),
 *     with protocol=classic the client's (range, cooperative-sticky, ...)
 * </pre>
 * and the commands and output lines of {@link MemberHost} (leave, stall, kill, quit).
 */
public final class ModernMembers {
    private ModernMembers() {}

    public static void main(String[] args) throws Exception {
        MemberHost.run(args[0], ModernMembers::join);
    }

    private static Member join(String bootstrap, String[] w) {
        String name = w[1];
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
        Properties p = MemberHost.consumerConfig(bootstrap, w[2], name);
        MemberHost.groupProtocol(p, protocol, assignor);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
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
        String[] kv = subscription.split("=", 2);
        Member.Subscription subscribe = switch (kv[0]) {
            case "topics" -> (consumer, listener) -> consumer.subscribe(List.of(kv[1].split(",")), listener);
            case "pattern" -> (consumer, listener) -> consumer.subscribe(Pattern.compile(kv[1]), listener);
            case "regex" -> (consumer, listener) -> consumer.subscribe(new SubscriptionPattern(kv[1]), listener);
            default -> throw new IllegalArgumentException("unknown subscription " + subscription);
        };
        return new Member(name, p, subscribe);
    }
}
