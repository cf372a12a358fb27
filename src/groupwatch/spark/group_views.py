"""The brokers' view of rebalancing groups, asked by the driver now and then.

A rebalance that never completes writes nothing to ``__consumer_offsets`` (see
:mod:`groupwatch.detect.stuck`); the brokers know.  At most every ``detect.stuck_check_seconds``
the driver asks them, with Kafka's Admin client in its JVM and the source's ``kafka.*``
options (as :mod:`~groupwatch.spark.topic_names` does): which classic groups are
``PreparingRebalance`` or ``CompletingRebalance`` (one ListGroups per broker, filtered by the
brokers), then describes those and the ones the previous look found rebalancing (so a group that
has settled is seen to).  The cost is bounded by the number of rebalancing groups.

Each look becomes a :class:`~groupwatch.detect.model.BrokerView` per group, handed with that
batch to the group's Python stage.  A failure to ask never stops the job: it is logged once and
groups are judged from their records meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from groupwatch.config import Config
from groupwatch.detect.model import REBALANCING_STATES, BrokerView

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")

#: How long one question may take: a batch waits for it.
ASK_TIMEOUT_SECONDS = 15
#: Kafka's ``ConsumerGroupState`` constants of a rebalance under way.
_REBALANCING = ("PREPARING_REBALANCE", "COMPLETING_REBALANCE")

#: A look: group -> (state as Kafka prints it, members as "member_id (client_id)").
Look = dict[str, tuple[str, tuple[str, ...]]]


def ask_brokers(
    spark: SparkSession,
    config: Config,
    also: Iterable[str] = (),
    timeout_seconds: int = ASK_TIMEOUT_SECONDS,
) -> Look:
    """The classic groups the brokers report rebalancing, and the groups in ``also``, described."""
    from groupwatch.spark.pipelines import kafka_source_options
    from groupwatch.spark.preflight import admin_properties

    options = kafka_source_options(config)
    jvm: Any = spark.sparkContext._jvm
    props = admin_properties(spark, options, "groupwatch-group-states", timeout_seconds)
    admin_pkg = jvm.org.apache.kafka.clients.admin
    common = jvm.org.apache.kafka.common
    admin = admin_pkg.Admin.create(props)
    unit = jvm.java.util.concurrent.TimeUnit.SECONDS
    try:
        states = jvm.java.util.HashSet()
        for name in _REBALANCING:
            states.add(getattr(common.ConsumerGroupState, name))
        types = jvm.java.util.HashSet()
        types.add(common.GroupType.CLASSIC)
        listed = (
            admin.listConsumerGroups(
                admin_pkg.ListConsumerGroupsOptions().inStates(states).withTypes(types)
            )
            .all()
            .get(timeout_seconds + 5, unit)
        )
        ids = {str(g.groupId()) for g in listed} | set(also)
        if not ids:
            return {}
        wanted = jvm.java.util.ArrayList()
        for g in sorted(ids):
            wanted.add(g)
        described = admin.describeConsumerGroups(wanted).all().get(timeout_seconds + 5, unit)
        out: Look = {}
        for g in sorted(ids):
            d = described.get(g)
            if d is None:
                continue
            members = tuple(
                sorted(f"{m.consumerId()} ({m.clientId()})" for m in d.members().toArray())
            )
            out[g] = (str(d.state().toString()), members)
        return out
    finally:
        admin.close(jvm.java.time.Duration.ofSeconds(2))


class GroupViews:
    """The driver's looks, at most every ``refresh_seconds`` (0: never)."""

    def __init__(
        self,
        ask: Callable[[Iterable[str]], Mapping[str, tuple[str, tuple[str, ...]]]],
        refresh_seconds: int,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._ask = ask
        self._refresh = refresh_seconds
        self._clock = clock
        self._wall_ms = wall_ms
        self._asked_at: float | None = None
        #: Groups the last look found rebalancing: described again at the next one.
        self._rebalancing: set[str] = set()
        self._warned = False

    @classmethod
    def of(cls, spark: SparkSession, config: Config) -> GroupViews:
        return cls(lambda also: ask_brokers(spark, config, also), config.detect.stuck_check_seconds)

    def look(self) -> dict[str, BrokerView]:
        """This batch's views: a new look if one is due, else none."""
        if self._refresh <= 0:
            return {}
        now = self._clock()
        if self._asked_at is not None and now - self._asked_at < self._refresh:
            return {}
        self._asked_at = now
        try:
            answer = dict(self._ask(sorted(self._rebalancing)))
        except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
            from groupwatch.spark.preflight import java_cause

            if not self._warned:
                log.warning(
                    "could not ask the brokers which groups rebalance (%s); rebalance_stuck is "
                    "judged from the records only; asking again every %d s "
                    "(detect.stuck_check_seconds)",
                    java_cause(exc),
                    self._refresh,
                )
                self._warned = True
            return {}
        at = self._wall_ms()
        views = {g: BrokerView(g, state, members, at) for g, (state, members) in answer.items()}
        self._rebalancing = {g for g, v in views.items() if v.state in REBALANCING_STATES}
        if self._rebalancing:
            log.info("the brokers report %d group(s) rebalancing", len(self._rebalancing))
        return views
