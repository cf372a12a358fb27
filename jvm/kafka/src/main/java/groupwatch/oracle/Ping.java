package groupwatch.oracle;

/** Prints the kafka-clients version on the classpath: proves the harness classpath is whole. */
public final class Ping {
    private Ping() {}

    public static void main(String[] args) {
        System.out.println(org.apache.kafka.common.utils.AppInfoParser.getVersion());
    }
}
