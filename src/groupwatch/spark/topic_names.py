"""Topic id -> name of the source cluster, asked of its brokers by the driver now and then.

KIP-848 consumer groups and share groups name topics in their records by id only; a group's own
records name some (partition metadata of brokers up to 4.0, offset commits of 4.1+ brokers),
the brokers' Admin API names all of them.  The driver asks with Kafka's Admin client in its JVM
and exactly the ``kafka.*`` options the source gets (as the check before the query starts
does), when the job starts and then at most every ``source.topic_names_refresh_seconds``, and
hands the map to the Python workers with each batch.

A failure to ask never stops the job: it is logged once, the last map (or none) stays in use,
and names come only from the groups' own records meanwhile.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groupwatch.config import Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")

#: How long one question may take: a batch waits for it.
ASK_TIMEOUT_SECONDS = 15
#: ``TopicListing.toString()`` since Kafka 3.0: ``(name=t, topicId=id, internal=false)``.  Topic
#: names are ``[a-zA-Z0-9._-]`` and ids base64url, so the text parses without ambiguity, in
#: one Py4J call instead of two per topic.
_LISTING = re.compile(
    r"\(name=([A-Za-z0-9._-]+), topicId=([A-Za-z0-9_-]+), internal=(?:true|false)\)"
)


def parse_listings(text: str) -> dict[str, str]:
    """topic id -> name from the text of a collection of ``TopicListing``."""
    return {tid: name for name, tid in _LISTING.findall(text)}


def ask_brokers(
    spark: SparkSession, config: Config, timeout_seconds: int = ASK_TIMEOUT_SECONDS
) -> dict[str, str]:
    """topic id -> name of every topic (internal ones too), from the source's brokers."""
    from groupwatch.spark.pipelines import kafka_source_options
    from groupwatch.spark.preflight import admin_properties

    options = kafka_source_options(config)
    jvm: Any = spark.sparkContext._jvm
    props = admin_properties(spark, options, "groupwatch-topic-names", timeout_seconds)
    admin_pkg = jvm.org.apache.kafka.clients.admin
    admin = admin_pkg.Admin.create(props)
    try:
        listing = admin_pkg.ListTopicsOptions().listInternal(True)
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        listings = admin.listTopics(listing).listings().get(timeout_seconds + 5, unit)
        names = parse_listings(str(listings.toString()))
        if len(names) != listings.size():
            # Not the text this parser knows: ask each listing (slower, same answer).
            names = {str(t.topicId().toString()): str(t.name()) for t in listings}
        return names
    finally:
        admin.close(jvm.java.time.Duration.ofSeconds(2))


class TopicNames:
    """The driver's copy of the map, refreshed when it is older than the configured interval."""

    def __init__(
        self,
        ask: Callable[[], Mapping[str, str]],
        refresh_seconds: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._refresh = refresh_seconds
        self._clock = clock
        self._names: dict[str, str] = {}
        self._asked_at: float | None = None
        self._failing = False
        self._warned = False

    @classmethod
    def of(cls, spark: SparkSession, config: Config) -> TopicNames:
        return cls(lambda: ask_brokers(spark, config), config.source.topic_names_refresh_seconds)

    def current(self) -> dict[str, str]:
        """The map to use for this batch (asking first if it is due)."""
        if self._refresh <= 0:
            return self._names
        now = self._clock()
        if self._asked_at is not None and now - self._asked_at < self._refresh:
            return self._names
        self._asked_at = now
        try:
            names = dict(self._ask())
        except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
            from groupwatch.spark.preflight import java_cause

            if not self._warned:
                log.warning(
                    "could not ask the brokers for topic names (%s); KIP-848 and share groups' "
                    "topics are named from their own records only; asking again every %d s "
                    "(source.topic_names_refresh_seconds)",
                    java_cause(exc),
                    self._refresh,
                )
                self._warned = True
            self._failing = True
            return self._names
        if self._failing:
            log.info("the brokers named %d topics again", len(names))
            self._failing = False
        else:
            log.debug("the brokers named %d topics", len(names))
        self._names = names
        return self._names
