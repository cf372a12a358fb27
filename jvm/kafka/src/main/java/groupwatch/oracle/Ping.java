package groupwatch.oracle;

import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;

/**
 * Prints the kafka-clients version on the classpath: proves the harness classpath is whole.
 * Given a bootstrap address, also prints the broker's finalized feature levels, one
 * {@code name=level} a line (what its storage was formatted with, e.g. share.version=2).
 */
public final class Ping {
    private Ping() {}

    public static void main(String[] args) throws Exception {
        // AppInfoParser moved to an internals package in 4.4; the same jar runs on either release.
        Class<?> parser;
        try {
            parser = Class.forName("org.apache.kafka.common.utils.internals.AppInfoParser");
        } catch (ClassNotFoundException older) {
            parser = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        }
        System.out.println(parser.getMethod("getVersion").invoke(null));
        if (args.length == 0) {
            return;
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
            Map<String, Short> levels = new TreeMap<>();
            features.finalizedFeatures().forEach((name, range) -> levels.put(name, range.maxVersionLevel()));
            levels.forEach((name, level) -> System.out.println(name + "=" + level));
        }
    }
}
