"""The brokers' view of groups for ``groupwatch analyze --bootstrap-server``.

After its input, ``analyze`` asks the brokers (kafka-python's admin client,
:func:`groupwatch.broker_client.describe_groups`, as it does for partition counts) about the
classic groups whose last completed generation had members or that emptied, and about those
the brokers report rebalancing, once more ``RECHECK_SECONDS`` later: two looks in a row, as
the streaming job's driver takes them (:mod:`groupwatch.spark.group_views`, every
``detect.stuck_check_seconds``).  The looks go through the same rule
(:func:`groupwatch.detect.stuck.on_view`), so both raise the same ``rebalance_stuck``.  The
asking is handed in (:func:`look_twice`'s ``describe``): the engine does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from groupwatch.detect.engine import Analyzer
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import REBALANCING_STATES, BrokerView

#: Seconds between ``analyze``'s two looks at a group the first look found rebalancing.
RECHECK_SECONDS = 5.0

#: group -> (state as Kafka names it, members as "member_id (client_id)").
Look = Mapping[str, tuple[str, tuple[str, ...]]]


def suspects(analyzer: Analyzer) -> list[str]:
    """Classic groups a rebalance can be stuck in: those whose last completed generation had
    members, and those that emptied (new members may be joining: a rollout empties the group
    first).  A KIP-848 group is judged by the modern checks."""
    return sorted(
        g
        for g, s in analyzer.states.items()
        if s.modern is None
        and (s.stuck.generation is not None or s.stuck.emptied_generation is not None)
    )


def look_twice(
    analyzer: Analyzer,
    describe: Callable[[Sequence[str]], Look],
    pause_seconds: float = RECHECK_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> list[Finding]:
    """Look at the suspects, and again after ``pause_seconds`` at those found rebalancing; the
    findings the looks raise."""
    groups = suspects(analyzer)
    if not groups:
        return []
    found: list[Finding] = []
    rebalancing: list[str] = []
    first = describe(groups)
    at = wall_ms()
    for group, (state, members) in sorted(first.items()):
        found.extend(analyzer.observe(BrokerView(group, state, members, at)))
        if state in REBALANCING_STATES:
            rebalancing.append(group)
    if not rebalancing:
        return found
    sleep(pause_seconds)
    second = describe(rebalancing)
    at = wall_ms()
    for group, (state, members) in sorted(second.items()):
        found.extend(analyzer.observe(BrokerView(group, state, members, at)))
    return found
