package groupwatch.oracle;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/** What the oracles both write: StickyAssignor's user data, and JSON strings. */
final class Wire {
    private Wire() {}

    /**
     * StickyAssignor's user data: the previous assignment grouped by topic, then the generation
     * (STICKY_ASSIGNOR_USER_DATA_V1); without one, V0.
     */
    static ByteBuffer stickyUserData(List<TopicPartition> previous, Integer generation) {
        Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
        for (TopicPartition tp : previous) {
            byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        }
        int size = 4 + (generation != null ? 4 : 0);
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            size += 2 + e.getKey().getBytes(StandardCharsets.UTF_8).length + 4 + 4 * e.getValue().size();
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.putInt(byTopic.size());
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            buffer.putShort((short) name.length);
            buffer.put(name);
            buffer.putInt(e.getValue().size());
            for (int p : e.getValue()) {
                buffer.putInt(p);
            }
        }
        if (generation != null) {
            buffer.putInt(generation);
        }
        buffer.flip();
        return buffer;
    }

    /** {@code s} as a JSON string: ASCII only, so the reader needs no charset. */
    static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
