package groupwatch.demo;

import java.util.Map;

import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;

/**
 * Kafka's range assignor as a release of an application may ship it: configured with
 * {@code groupwatch.release.fail=true} its {@code assign()} throws every time (a bad release:
 * no SyncGroup ever succeeds), with {@code groupwatch.release.delay.ms=N} it takes N ms first
 * (a slow but legal one).  Its protocol name is {@code range}, so old and new releases agree.
 */
public final class ReleaseAssignor extends RangeAssignor implements Configurable {
    public static final String FAIL = "groupwatch.release.fail";
    public static final String DELAY_MS = "groupwatch.release.delay.ms";

    private boolean fail;
    private long delayMs;

    @Override
    public void configure(Map<String, ?> configs) {
        fail = Boolean.parseBoolean(String.valueOf(configs.get(FAIL)));
        Object delay = configs.get(DELAY_MS);
        delayMs = delay == null ? 0 : Long.parseLong(String.valueOf(delay));
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        if (fail) {
            throw new IllegalStateException("release assignor: assign() fails in this release");
        }
        if (delayMs > 0) {
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return super.assign(metadata, groupSubscription);
    }
}
