"""``groupwatch lag`` reads ``partition_lag`` with delta-rs and prints the contract's columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import write_deltalake

from groupwatch.cli import main
from groupwatch.detect.lag.judge import LagRules, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner
from groupwatch.spark.lag_rows import partition_lag_table

CONTRACT = [
    "group", "topic", "partition", "committed_offset", "commit_time", "end_offset",
    "lag_records", "lag_seconds", "lag_seconds_at_least", "status", "owner_member",
    "owner_client", "owner_host", "owner_generation", "observed_at",
]  # fmt: skip


def test_prints_the_rows_of_the_asked_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = [EndOffset("orders", 0, 0, 100, 1_000_000), EndOffset("orders", 0, 0, 200, 1_010_000)]
    owner = Owner("m-1", "billing-1", "/10.0.0.1", 7)
    verdicts = [
        judge(Commit("billing", "orders", 0, 150, 1_005_000), history, owner, LagRules()),
        judge(Commit("billing", "orders", 1, 5, 1_005_000), [], None, LagRules()),
        judge(Commit("other", "orders", 0, 200, 1_005_000), history, None, LagRules()),
    ]
    root = tmp_path / "delta"
    write_deltalake(
        str(root / "partition_lag"),
        partition_lag_table([v.row for v in verdicts]),
    )
    assert main(["lag", "--set", f"delta.root={root}", "--group", "billing", "--json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["group"], r["partition"]) for r in out] == [("billing", 0), ("billing", 1)]
    first = out[0]
    assert list(first)[: len(CONTRACT)] == CONTRACT
    assert (first["committed_offset"], first["end_offset"], first["lag_records"]) == (150, 200, 50)
    assert first["owner_member"] == "m-1" and first["owner_generation"] == 7
    assert first["observed_at"] == "1970-01-01T00:16:50Z"
    assert abs(first["lag_seconds"] - (1010 - 1005.1)) < 1e-6
    assert out[1]["end_offset"] is None and out[1]["lag_records"] is None
    assert main(["lag", "--set", f"delta.root={root}"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert len(text) == 3 and "billing\torders-0\tok\t50 records" in text[0]


def test_lists_share_partitions_and_every_group_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Share partitions from ``share_partition_state`` beside the committed-offset rows, each
    row with its group's type: a KIP-848 group's from its snapshots, classic otherwise."""
    import dataclasses
    import datetime as dt

    import pyarrow as pa

    from groupwatch.delta.read import schema
    from groupwatch.tables import SharePartitionRow

    history = [EndOffset("orders", 0, 0, 100, 1_000_000)]
    verdicts = [
        judge(Commit("billing", "orders", 0, 90, 1_005_000), history, None, LagRules()),
        judge(Commit("kip848", "orders", 0, 100, 1_005_000), history, None, LagRules()),
    ]
    root = tmp_path / "delta"
    write_deltalake(str(root / "partition_lag"), partition_lag_table([v.row for v in verdicts]))
    snaps = pa.Table.from_pylist(
        [
            {"group": "kip848", "group_type": "consumer", "source_offset": 4},
            {"group": "billing", "group_type": None, "source_offset": 2},
        ],
        schema=pa.schema(
            [("group", pa.string()), ("group_type", pa.string()), ("source_offset", pa.int64())]
        ),
    )
    write_deltalake(str(root / "group_snapshots"), snaps)
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    share = SharePartitionRow(
        group="queue",
        topic="orders",
        topic_id="AAAAAAAAAAAAAAAAAAAAAA",
        partition=1,
        start_offset=40,
        state_epoch=0,
        delivery_complete_count=2,
        end_offset=50,
        lag_records=8,
        in_flight_records=3,
        in_flight_batches=[],
        archived_records=1,
        archived_ranges=[{"first_offset": 41, "last_offset": 41}],
        max_delivery_count=5,
        observed_at=when,
        end_observed_at=when,
    )
    write_deltalake(
        str(root / "share_partition_state"),
        pa.Table.from_pylist([dataclasses.asdict(share)], schema=schema("share_partition_state")),
    )
    assert main(["lag", "--set", f"delta.root={root}", "--json"]) == 0
    out = {r["group"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {g: r["group_type"] for g, r in out.items()} == {
        "billing": "classic",
        "kip848": "consumer",
        "queue": "share",
    }
    q = out["queue"]
    assert (q["topic"], q["partition"], q["end_offset"], q["lag_records"]) == ("orders", 1, 50, 8)
    assert (q["start_offset"], q["in_flight_records"], q["archived_records"]) == (40, 3, 1)
    assert out["billing"]["start_offset"] is None and out["billing"]["lag_records"] == 10
    assert main(["lag", "--set", f"delta.root={root}", "--group", "queue"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line == "queue\torders-1\tshare\t8 records\tstart 40, in flight 3, archived 1"
