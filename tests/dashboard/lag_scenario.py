"""The lag tables (``partition_lag``, ``lag_history``, ``end_offsets``) as the job writes them,
in the contract's exact columns and types (tests/dashboard/scenario.py's ``write``: delta-rs,
the Arrow schema of ``groupwatch.tables``), for the dashboard's lag views.

``rows`` are what the tests assert on: the page must show what is in them, nothing computed by
the test.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.dashboard.scenario import write


def partition(
    group: str,
    topic: str,
    partition: int,
    committed: int,
    end: int | None,
    seconds: float | None,
    status: str,
    now: datetime,
    *,
    at_least: bool = False,
    owner: tuple[str, str, str, int] | None = None,
) -> dict[str, Any]:
    """One ``partition_lag`` row; ``owner``: (member, client, host, generation)."""
    member, client, host, generation = owner or (None, None, None, None)
    return {
        "group": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": committed,
        "commit_time": now - timedelta(seconds=30),
        "end_offset": end,
        "lag_records": None if end is None else max(0, end - committed),
        "lag_seconds": seconds,
        "lag_seconds_at_least": at_least,
        "status": status,
        "owner_member": member,
        "owner_client": client,
        "owner_host": host,
        "owner_generation": generation,
        "observed_at": now - timedelta(seconds=5),
    }


def history(
    group: str, topic: str, now: datetime, points: list[tuple[int, int, float | None, str]]
) -> list[dict[str, Any]]:
    """``lag_history`` rows of one group and topic: (minutes ago, records, seconds, status)."""
    return [
        {
            "group": group,
            "topic": topic,
            "observed_at": now - timedelta(minutes=ago),
            "partitions": 3,
            "lag_records": records,
            "lag_seconds": seconds,
            "status": status,
        }
        for ago, records, seconds, status in points
    ]


def write_lag(
    root: Path,
    partitions: list[dict[str, Any]],
    lag_history: list[dict[str, Any]] = (),  # type: ignore[assignment]
    end_offsets: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> None:
    write(root, "partition_lag", partitions)
    write(root, "lag_history", list(lag_history))
    write(root, "end_offsets", list(end_offsets))
