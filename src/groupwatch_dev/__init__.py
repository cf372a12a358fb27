"""groupwatch's development tooling: the local KRaft broker, the demo and the scenario library.

It sits above the product: it may import ``groupwatch``; ``groupwatch`` never imports it.
"""

#: Options for a JVM the tooling or the tests start that lives seconds to minutes on small
#: data (a member host, a client, a broker of a test session, Kafka's storage tool, a
#: ``groupwatch run`` of a test): C1 only, because C2 spends more CPU compiling such a JVM's code
#: than the code then saves (docs/testing.md, "The JVMs a test starts"). A long-lived one, the
#: test session's own SparkSession, keeps C2.
SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1",)
