"""The lag poll's question to the brokers, asked through the driver's JVM: the log start and
end offsets of the partitions some group commits to, and the first record at a committed
offset (when the oldest record a group has not consumed was written).

Only the driver has the JVM: what this asks is handed on as values
(:mod:`groupwatch.spark.lag_answer`) to the judging, in the driver or in a process of its own.
The job's share partitions' end offsets are asked the same way (:mod:`groupwatch.spark.share_ends`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupwatch.config import Config
from groupwatch.detect.lag.poll import TP
from groupwatch.spark.lag_answer import Answer, RecordTimes, partitions_json
from groupwatch.spark.pipelines import kafka_source_options
from groupwatch.spark.preflight import admin_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ASK_TIMEOUT_SECONDS = 15

_DESERIALIZER = "org.apache.kafka.common.serialization.ByteArrayDeserializer"


class OffsetAsker:
    """A Kafka consumer in the driver's JVM, opened for each poll (a client left open would
    outlive a query that stops), asked for the log end and start offsets of many partitions
    at once (``endOffsets``, ``beginningOffsets``: ListOffsets requests to each leader, latest
    and earliest, as Kafka's Admin ``listOffsets`` sends them).  The partitions cross into the
    JVM as one JSON text, taken apart there by the Kafka connector's own parser, and the
    answers come back as one text each: a Py4J call per partition (three, to build the Admin
    client's request maps) cost about 150 µs, 35 s for the 246,000 partitions of the cluster
    model.  The list of the last poll is kept: the partitions rarely change between polls."""

    def __init__(self, spark: SparkSession, config: Config, timeout: int = ASK_TIMEOUT_SECONDS):
        self.spark = spark
        self.config = config
        self.timeout = timeout
        self._request: tuple[tuple[tuple[str, tuple[int, ...]], ...], Any] | None = None

    def _properties(self) -> Any:
        props = admin_properties(
            self.spark, kafka_source_options(self.config), "groupwatch-lag", self.timeout
        )
        props.setProperty("key.deserializer", _DESERIALIZER)
        props.setProperty("value.deserializer", _DESERIALIZER)
        props.setProperty("enable.auto.commit", "false")
        return props

    def _partitions(self, kept: tuple[tuple[str, tuple[int, ...]], ...]) -> Any:
        """A ``java.util.List<TopicPartition>`` of ``kept``, built in the JVM."""
        if self._request is not None and self._request[0] == kept:
            return self._request[1]
        jvm: Any = self.spark.sparkContext._jvm
        text = partitions_json((t, p) for t, ps in kept for p in ps)
        array = jvm.org.apache.spark.sql.kafka010.JsonUtils.partitions(text)
        # Py4J finds no varargs method for an array (``Arrays.asList``): Scala wraps it.
        wrapped = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(array)
        request = jvm.java.util.ArrayList(
            jvm.scala.jdk.javaapi.CollectionConverters.asJava(wrapped)
        )
        self._request = (kept, request)
        return request

    def ask(self, wanted: Mapping[str, Sequence[int]]) -> Answer | None:
        """The brokers' answer for the partitions of the topics that exist (None: no wanted
        topic exists; a failure raises)."""
        if not wanted:
            return None
        jvm: Any = self.spark.sparkContext._jvm
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        wait = jvm.java.time.Duration.ofSeconds(self.timeout)
        props = self._properties()
        admin = consumer = None
        try:
            admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
            options = jvm.org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(True)
            listed = str(admin.listTopics(options).names().get(self.timeout + 5, unit).toString())
            names = set(listed.strip("[]").split(", "))
            kept = tuple(sorted((t, tuple(sorted(ps))) for t, ps in wanted.items() if t in names))
            if not kept:
                return None
            request = self._partitions(kept)
            consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
            ends = str(consumer.endOffsets(request, wait).toString())
            observed = int(time.time() * 1000)
            starts = str(consumer.beginningOffsets(request, wait).toString())
        finally:
            closing = jvm.java.time.Duration.ofSeconds(2)
            for client in (consumer, admin):
                if client is not None:
                    client.close(closing)
        return Answer(ends, starts, observed)

    def record_times(self, positions: Mapping[TP, Sequence[int]]) -> RecordTimes:
        """The first record at or after each position (a consumer in the driver's JVM, assigned
        the partitions, no group): the time the oldest record a group has not consumed was
        written, as ``analyze`` reads it (:func:`groupwatch.broker_client.record_times`).
        A partition with several positions is read once per position, in rounds."""
        found: dict[tuple[TP, int], tuple[int, int]] = {}
        asked = {tp: list(v) for tp, v in positions.items() if v}
        if not asked:
            return RecordTimes(asked, found)
        jvm: Any = self.spark.sparkContext._jvm
        props = self._properties()
        props.setProperty("max.poll.records", str(max(1, len(asked)) * 4))
        consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
        tp_of = jvm.org.apache.kafka.common.TopicPartition
        try:
            for round_ in range(max(len(v) for v in asked.values())):
                wanted = {tp: v[round_] for tp, v in asked.items() if len(v) > round_}
                jtps = {tp: tp_of(tp[0], tp[1]) for tp in wanted}
                request = jvm.java.util.ArrayList()
                for jtp in jtps.values():
                    request.add(jtp)
                consumer.assign(request)
                for tp, offset in wanted.items():
                    consumer.seek(jtps[tp], offset)
                deadline = time.monotonic() + self.timeout
                missing = set(wanted)
                while missing and time.monotonic() < deadline:
                    records = consumer.poll(jvm.java.time.Duration.ofMillis(500))
                    for tp in list(missing):
                        got = records.records(jtps[tp])
                        if got.size() > 0:
                            first = got.get(0)
                            found[(tp, wanted[tp])] = (int(first.offset()), int(first.timestamp()))
                            missing.discard(tp)
                            consumer.pause(jvm.java.util.Collections.singletonList(jtps[tp]))
        finally:
            consumer.close(jvm.java.time.Duration.ofSeconds(2))
        return RecordTimes(asked, found)
