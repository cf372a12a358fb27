package groupwatch.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.MemberData;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolAssignmentJsonConverter;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.common.message.ConsumerProtocolSubscriptionJsonConverter;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordType;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Kafka as the oracle for groupwatch's record decoder: one JSON request per stdin line, one JSON
 * answer per stdout line. Encoding requests build bytes with Kafka's own serialisers; decoding
 * requests read bytes (ours) with Kafka's own deserialisers and re-serialise them, so the test can
 * demand byte identity. Every answer carries either the result or {"error": "..."}; one bad request
 * never stops the run.
 *
 * <p>Ops: record, subscription, assignment, sticky, coop (encode); decode_record,
 * decode_subscription, decode_assignment, decode_sticky, decode_coop (decode); schemas (the wire
 * layout of every record key and value version, from the generated classes' {@code SCHEMAS}).
 *
 * <p>A request with {@code "serde": "share"} is about {@code __share_group_state}: the share
 * coordinator's serde and record types (whose ids 0 and 1 mean snapshot and update there).
 */
public final class RecordOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final ShareCoordinatorRecordSerde SHARE_SERDE = new ShareCoordinatorRecordSerde();

    private static boolean share(JsonNode req) {
        JsonNode s = req.get("serde");
        return s != null && "share".equals(s.asText());
    }

    private static CoordinatorRecordSerde serde(JsonNode req) {
        return share(req) ? SHARE_SERDE : SERDE;
    }

    private static ApiMessage readKey(JsonNode req, JsonNode json, short type) {
        return share(req)
            ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordKeyFromJson(json, type)
            : CoordinatorRecordJsonConverters.readRecordKeyFromJson(json, type);
    }

    private static ApiMessage readValue(JsonNode req, JsonNode json, short type, short version) {
        return share(req)
            ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordValueFromJson(json, type, version)
            : CoordinatorRecordJsonConverters.readRecordValueFromJson(json, type, version);
    }

    private static JsonNode keyJson(JsonNode req, ApiMessage key) {
        return share(req)
            ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.writeRecordKeyAsJson(key)
            : CoordinatorRecordJsonConverters.writeRecordKeyAsJson(key);
    }

    private static JsonNode valueJson(JsonNode req, ApiMessage value, short version) {
        return share(req)
            ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.writeRecordValueAsJson(value, version)
            : CoordinatorRecordJsonConverters.writeRecordValueAsJson(value, version);
    }

    private RecordOracle() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
            } catch (Exception e) {
                answer = JSON.createObjectNode();
                answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(answer));
        }
        out.flush();
    }

    static ObjectNode handle(JsonNode req) throws Exception {
        String op = req.get("op").asText();
        return switch (op) {
            case "record" -> encodeRecord(req);
            case "subscription" -> hex(ConsumerProtocol.serializeSubscription(subscription(req), (short) req.get("version").asInt()));
            case "assignment" -> hex(ConsumerProtocol.serializeAssignment(
                new Assignment(partitions(req.get("partitions")), bytesOrNull(req.get("user_data_hex"))),
                (short) req.get("version").asInt()));
            case "sticky" -> hex(stickyUserData(req));
            case "coop" -> hex(coopUserData(req.get("generation").asInt()));
            case "decode_record" -> decodeRecord(req);
            case "decode_subscription" -> decodeSubscription(bytes(req.get("hex")));
            case "decode_assignment" -> decodeAssignment(bytes(req.get("hex")));
            case "decode_sticky" -> decodeSticky(bytes(req.get("hex")));
            case "decode_coop" -> decodeCoop(bytes(req.get("hex")));
            case "schemas" -> schemas();
            default -> throw new IllegalArgumentException("unknown op " + op);
        };
    }

    // --- records ---------------------------------------------------------------------------

    private static ObjectNode encodeRecord(JsonNode req) {
        short type = (short) req.get("type").asInt();
        ApiMessage key = readKey(req, req.get("key"), type);
        JsonNode value = req.get("value");
        CoordinatorRecord record;
        if (value == null || value.isNull()) {
            record = CoordinatorRecord.tombstone(key);
        } else {
            short version = (short) req.get("version").asInt();
            ApiMessage v = readValue(req, value, type, version);
            record = CoordinatorRecord.record(key, new ApiMessageAndVersion(v, version));
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("key_hex", HEX.formatHex(serde(req).serializeKey(record)));
        byte[] valueBytes = serde(req).serializeValue(record);
        if (valueBytes == null) out.putNull("value_hex");
        else out.put("value_hex", HEX.formatHex(valueBytes));
        return out;
    }

    private static ObjectNode decodeRecord(JsonNode req) {
        ByteBuffer key = ByteBuffer.wrap(bytes(req.get("key_hex")));
        byte[] valueBytes = bytesOrNullArray(req.get("value_hex"));
        CoordinatorRecord record = serde(req).deserialize(key, valueBytes == null ? null : ByteBuffer.wrap(valueBytes));
        ObjectNode out = JSON.createObjectNode();
        out.set("key", keyJson(req, record.key()));
        out.put("key_hex", HEX.formatHex(serde(req).serializeKey(record)));
        if (record.value() == null) {
            out.putNull("version");
            out.putNull("value");
            out.putNull("value_hex");
        } else {
            short version = record.value().version();
            out.put("version", version);
            out.set("value", valueJson(req, record.value().message(), version));
            out.put("value_hex", HEX.formatHex(serde(req).serializeValue(record)));
        }
        return out;
    }

    // --- schemas -------------------------------------------------------------------------------

    /** Per record type id: {"key": layout, "values": {version: layout}}; the embedded consumer
     * protocol under "consumer_protocol_subscription"/"..._assignment". */
    private static ObjectNode schemas() throws Exception {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode types = out.putObject("record_types");
        ObjectNode shareTypes = out.putObject("share_state_record_types");
        for (var t : org.apache.kafka.coordinator.share.generated.CoordinatorRecordType.values()) {
            ObjectNode o = shareTypes.putObject(Short.toString(t.id()));
            o.put("name", t.toString());
            o.set("key", layout(schemaOf(t.newRecordKey().getClass(), (short) 0)));
            ObjectNode values = o.putObject("values");
            for (short v = t.lowestSupportedVersion(); v <= t.highestSupportedVersion(); v++) {
                values.set(Short.toString(v), layout(schemaOf(t.newRecordValue().getClass(), v)));
            }
        }
        for (CoordinatorRecordType t : CoordinatorRecordType.values()) {
            ObjectNode o = types.putObject(Short.toString(t.id()));
            o.put("name", t.toString());
            o.set("key", layout(schemaOf(t.newRecordKey().getClass(), (short) 0)));
            ObjectNode values = o.putObject("values");
            for (short v = t.lowestSupportedVersion(); v <= t.highestSupportedVersion(); v++) {
                values.set(Short.toString(v), layout(schemaOf(t.newRecordValue().getClass(), v)));
            }
        }
        for (var e : java.util.Map.of("consumer_protocol_subscription", ConsumerProtocolSubscription.class,
                "consumer_protocol_assignment", ConsumerProtocolAssignment.class).entrySet()) {
            ObjectNode values = out.putObject(e.getKey());
            Schema[] all = (Schema[]) e.getValue().getField("SCHEMAS").get(null);
            for (short v = 0; v < all.length; v++) {
                if (all[v] != null) values.set(Short.toString(v), layout(all[v]));
            }
        }
        return out;
    }

    private static Schema schemaOf(Class<?> message, short version) throws Exception {
        return ((Schema[]) message.getField("SCHEMAS").get(null))[version];
    }

    private static ObjectNode layout(org.apache.kafka.common.protocol.types.Type type) {
        ObjectNode o = JSON.createObjectNode();
        o.put("nullable", type.isNullable());
        if (type instanceof Schema schema) {
            ArrayNode fields = o.putArray("struct");
            ObjectNode tagged = o.putObject("tagged");
            for (org.apache.kafka.common.protocol.types.BoundField bf : schema.fields()) {
                if (bf.def.type instanceof org.apache.kafka.common.protocol.types.TaggedFields tf) {
                    o.put("flexible", true);
                    tf.fields().forEach((tag, f) -> tagged.set(Integer.toString(tag), field(f)));
                } else {
                    fields.add(field(bf.def));
                }
            }
        } else if (type.arrayElementType().isPresent()) {
            o.set("array", layout(type.arrayElementType().get()));
        } else {
            o.put("prim", type.toString());
        }
        return o;
    }

    private static ObjectNode field(org.apache.kafka.common.protocol.types.Field f) {
        ObjectNode o = JSON.createObjectNode();
        o.put("name", f.name);
        o.set("type", layout(f.type));
        return o;
    }

    // --- consumer protocol -------------------------------------------------------------------

    private static Subscription subscription(JsonNode req) {
        List<String> topics = new ArrayList<>();
        req.get("topics").forEach(t -> topics.add(t.asText()));
        JsonNode gen = req.get("generation_id");
        JsonNode rack = req.get("rack_id");
        return new Subscription(topics, bytesOrNull(req.get("user_data_hex")), partitions(req.get("owned_partitions")),
            gen == null || gen.isNull() ? -1 : gen.asInt(),
            rack == null || rack.isNull() ? Optional.empty() : Optional.of(rack.asText()));
    }

    private static ObjectNode decodeSubscription(byte[] data) {
        short version = ConsumerProtocol.deserializeVersion(ByteBuffer.wrap(data));
        ConsumerProtocolSubscription raw = ConsumerProtocol.deserializeConsumerProtocolSubscription(ByteBuffer.wrap(data));
        Subscription sub = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(data));
        short readAs = (short) Math.min(version, ConsumerProtocolSubscription.HIGHEST_SUPPORTED_VERSION);
        ObjectNode out = JSON.createObjectNode();
        out.put("version", version);
        out.set("message", ConsumerProtocolSubscriptionJsonConverter.write(raw, readAs));
        // Re-encode the generated message itself: serializeSubscription would sort topics/partitions.
        out.put("reencoded_hex", HEX.formatHex(MessageUtil.toVersionPrefixedBytes(readAs, raw)));
        // The Subscription view applies Kafka's semantics (generation < 0 and rack "" are absent).
        ObjectNode view = out.putObject("view");
        ArrayNode owned = view.putArray("owned_partitions");
        for (TopicPartition tp : sub.ownedPartitions()) owned.addArray().add(tp.topic()).add(tp.partition());
        if (sub.generationId().isPresent()) view.put("generation_id", sub.generationId().get());
        else view.putNull("generation_id");
        if (sub.rackId().isPresent()) view.put("rack_id", sub.rackId().get());
        else view.putNull("rack_id");
        return out;
    }

    private static ObjectNode decodeAssignment(byte[] data) {
        short version = ConsumerProtocol.deserializeVersion(ByteBuffer.wrap(data));
        ConsumerProtocolAssignment raw = ConsumerProtocol.deserializeConsumerProtocolAssignment(ByteBuffer.wrap(data));
        Assignment asg = ConsumerProtocol.deserializeAssignment(ByteBuffer.wrap(data));
        short readAs = (short) Math.min(version, ConsumerProtocolAssignment.HIGHEST_SUPPORTED_VERSION);
        ObjectNode out = JSON.createObjectNode();
        out.put("version", version);
        out.set("message", ConsumerProtocolAssignmentJsonConverter.write(raw, readAs));
        out.put("reencoded_hex", HEX.formatHex(MessageUtil.toVersionPrefixedBytes(readAs, raw)));
        ArrayNode parts = out.putArray("partitions");
        for (TopicPartition tp : asg.partitions()) parts.addArray().add(tp.topic()).add(tp.partition());
        return out;
    }

    // --- assignor user data ---------------------------------------------------------------------

    private static ByteBuffer stickyUserData(JsonNode req) throws Exception {
        List<TopicPartition> partitions = partitions(req.get("partitions"));
        JsonNode gen = req.get("generation");
        if (gen == null || gen.isNull()) {
            // V0 (0.11 - 2.2 clients): Kafka keeps the schema but no longer writes it, so build
            // the Struct from Kafka's own STICKY_ASSIGNOR_USER_DATA_V0 schema object.
            Schema v0 = (Schema) staticField(StickyAssignor.class, "STICKY_ASSIGNOR_USER_DATA_V0");
            Schema topicAssignment = (Schema) staticField(StickyAssignor.class, "TOPIC_ASSIGNMENT");
            Struct struct = new Struct(v0);
            List<Struct> topics = new ArrayList<>();
            for (String topic : partitions.stream().map(TopicPartition::topic).distinct().toList()) {
                Struct t = new Struct(topicAssignment);
                t.set("topic", topic);
                t.set("partitions", partitions.stream().filter(tp -> tp.topic().equals(topic))
                    .map(TopicPartition::partition).toArray());
                topics.add(t);
            }
            struct.set("previous_assignment", topics.toArray());
            ByteBuffer buf = ByteBuffer.allocate(v0.sizeOf(struct));
            v0.write(buf, struct);
            buf.flip();
            return buf;
        }
        Method m = StickyAssignor.class.getDeclaredMethod("serializeTopicPartitionAssignment", MemberData.class);
        m.setAccessible(true);
        return (ByteBuffer) m.invoke(null, new MemberData(partitions, Optional.of(gen.asInt())));
    }

    private static ObjectNode decodeSticky(byte[] data) throws Exception {
        Method m = StickyAssignor.class.getDeclaredMethod("deserializeTopicPartitionAssignment", ByteBuffer.class);
        m.setAccessible(true);
        MemberData md = (MemberData) m.invoke(null, ByteBuffer.wrap(data));
        ObjectNode out = JSON.createObjectNode();
        ArrayNode parts = out.putArray("partitions");
        for (TopicPartition tp : md.partitions) parts.addArray().add(tp.topic()).add(tp.partition());
        if (md.generation.isPresent()) out.put("generation", md.generation.get());
        else out.putNull("generation");
        return out;
    }

    private static ByteBuffer coopUserData(int generation) {
        CooperativeStickyAssignor assignor = new CooperativeStickyAssignor();
        assignor.onAssignment(new Assignment(List.of()),
            new ConsumerGroupMetadata("g", generation, "m", Optional.empty()));
        return assignor.subscriptionUserData(Set.of());
    }

    private static ObjectNode decodeCoop(byte[] data) throws Exception {
        // memberData() is Kafka's reader; a subscription without generationId makes it use userData.
        Method m = CooperativeStickyAssignor.class.getDeclaredMethod("memberData", Subscription.class);
        m.setAccessible(true);
        MemberData md = (MemberData) m.invoke(new CooperativeStickyAssignor(),
            new Subscription(List.of("t"), ByteBuffer.wrap(data), List.of()));
        ObjectNode out = JSON.createObjectNode();
        if (md.generation.isPresent()) out.put("generation", md.generation.get());
        else out.putNull("generation");
        return out;
    }

    // --- helpers -------------------------------------------------------------------------------

    private static Object staticField(Class<?> cls, String name) throws Exception {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(null);
    }

    private static List<TopicPartition> partitions(JsonNode pairs) {
        List<TopicPartition> out = new ArrayList<>();
        if (pairs != null) pairs.forEach(p -> out.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt())));
        return out;
    }

    private static byte[] bytes(JsonNode hex) {
        return HEX.parseHex(hex.asText());
    }

    private static byte[] bytesOrNullArray(JsonNode hex) {
        return hex == null || hex.isNull() ? null : HEX.parseHex(hex.asText());
    }

    private static ByteBuffer bytesOrNull(JsonNode hex) {
        byte[] b = bytesOrNullArray(hex);
        return b == null ? null : ByteBuffer.wrap(b);
    }

    private static byte[] toArray(ByteBuffer buf) {
        ByteBuffer dup = buf.duplicate();
        byte[] out = new byte[dup.remaining()];
        dup.get(out);
        return out;
    }

    private static ObjectNode hex(ByteBuffer buf) {
        ObjectNode out = JSON.createObjectNode();
        if (buf == null) out.putNull("hex");
        else out.put("hex", HEX.formatHex(toArray(buf)));
        return out;
    }
}
