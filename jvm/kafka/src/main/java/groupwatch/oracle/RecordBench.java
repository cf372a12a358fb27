package groupwatch.oracle;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;

/**
 * Kafka's side of bench/bench_decode.py: how many records per second Kafka's own deserialisers
 * read, on the very bytes the Python benchmark decodes. Input file: one record per line,
 * "members keyhex valuehex". Two figures per record: "outer" = GroupCoordinatorRecordSerde only
 * (what the broker does when loading), "full" = plus ConsumerProtocol for every member's
 * subscription and assignment (what groupwatch's decode_record does). Prints one JSON line each.
 */
public final class RecordBench {
    private RecordBench() {}

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        double seconds = Double.parseDouble(args[1]);
        GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
        HexFormat hex = HexFormat.of();
        for (String line : lines) {
            String[] parts = line.trim().split(" ");
            int members = Integer.parseInt(parts[0]);
            byte[] key = hex.parseHex(parts[1]);
            byte[] value = hex.parseHex(parts[2]);
            // JIT warm-up on the same work, then the measured run.
            rate(serde, key, value, false, seconds / 2);
            double outer = rate(serde, key, value, false, seconds);
            rate(serde, key, value, true, seconds / 2);
            double full = rate(serde, key, value, true, seconds);
            System.out.printf("{\"members\":%d,\"outer_rps\":%.1f,\"full_rps\":%.1f}%n", members, outer, full);
        }
    }

    private static long sink;

    private static double rate(GroupCoordinatorRecordSerde serde, byte[] key, byte[] value, boolean full,
                               double seconds) {
        long n = 0;
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long start = System.nanoTime();
        long now;
        do {
            for (int i = 0; i < 16; i++) {
                CoordinatorRecord r = serde.deserialize(ByteBuffer.wrap(key), ByteBuffer.wrap(value));
                GroupMetadataValue v = (GroupMetadataValue) r.value().message();
                sink += v.members().size();
                if (full) {
                    for (GroupMetadataValue.MemberMetadata m : v.members()) {
                        sink += ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(m.subscription())).topics().size();
                        sink += ConsumerProtocol.deserializeAssignment(ByteBuffer.wrap(m.assignment())).partitions().size();
                    }
                }
            }
            n += 16;
            now = System.nanoTime();
        } while (now < deadline);
        return n / ((now - start) / 1e9);
    }
}
