"""groupwatch's development tooling: the local KRaft broker, the demo and the scenario library.

It sits above the product: it may import ``groupwatch``; ``groupwatch`` never imports it.
"""

#: Options for a JVM the tooling or the tests start that lives seconds to minutes on small
#: data (a member host, a client, a broker of a test session, Kafka's storage tool, a
#: ``groupwatch run`` of a test): C1 only, because C2 spends more CPU compiling such a JVM's code
#: than the code then saves (docs/testing.md, "The JVMs a test starts"). A long-lived one, the
#: test session's own SparkSession, keeps C2. C1 alone gets a code cache of 48 MB, not the 240 MB
#: of tiered compiling: a Spark driver fills that within a minute, and the JVM then stops
#: compiling altogether ("CodeCache is full. Compiler has been disabled."), running what it
#: meets later interpreted; its batches took twice as long from then on.
SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
