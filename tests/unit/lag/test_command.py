"""``groupwatch lag`` reads ``partition_lag`` with delta-rs and prints the contract's columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import write_deltalake

from groupwatch.cli import main
from groupwatch.detect.lag.judge import LagRules, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner
from groupwatch.spark.lag import partition_lag_table

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
