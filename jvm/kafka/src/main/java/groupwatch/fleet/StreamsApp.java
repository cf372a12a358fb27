package groupwatch.fleet;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * One instance of a small stateful Kafka Streams application (a count per key, kept in a state
 * store with its changelog), for the fleet tests: real Streams groups in {@code __consumer_offsets}.
 *
 * <pre>
 * StreamsApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC GROUP_PROTOCOL STATE_DIR [CLIENT_ID]
 * </pre>
 * GROUP_PROTOCOL is {@code classic} (the consumer group protocol with Streams' own assignor) or
 * {@code streams} (KIP-1071, on brokers that enable it). While RUNNING it prints
 * {@code assigned t-p,...} (the input partitions of its active tasks, sorted) whenever they
 * change; a line {@code leave} on stdin, or its end, closes the instance and leaves the group.
 */
public final class StreamsApp {
    private StreamsApp() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String applicationId = args[1];
        String input = args[2];
        String protocol = args[3];
        String stateDir = args[4];
        String clientId = args.length > 5 ? args[5] : applicationId;

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        // groupByKey keeps the input's partitioning (no repartition topic); the count is the
        // state (a store and its changelog topic), so tasks carry state between instances.
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("fleet-counts")
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("error " + e);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        Thread watcher = new Thread(() -> watch(streams), "watch-assignment");
        watcher.setDaemon(true);
        watcher.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("leave")) {
            // only "leave" means anything
        }
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
        System.out.println("closed");
        System.out.flush();
        System.exit(0);
    }

    /** Report the input partitions of the active tasks whenever they change while RUNNING. */
    private static void watch(KafkaStreams streams) {
        String last = null;
        while (true) {
            try {
                if (streams.state() == KafkaStreams.State.RUNNING) {
                    TreeSet<String> owned = new TreeSet<>();
                    for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                        for (TaskMetadata task : t.activeTasks()) {
                            for (TopicPartition tp : task.topicPartitions()) {
                                owned.add(tp.topic() + "-" + tp.partition());
                            }
                        }
                    }
                    String now = String.join(",", owned);
                    if (!now.equals(last)) {
                        System.out.println("assigned " + now);
                        System.out.flush();
                        last = now;
                    }
                } else if (last != null && !last.isEmpty()) {
                    // Rebalancing: what it owned is not settled; say so until RUNNING again.
                    System.out.println("assigned ");
                    System.out.flush();
                    last = "";
                }
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // metadataForLocalThreads can race a state change; try again next round
            }
        }
    }
}
