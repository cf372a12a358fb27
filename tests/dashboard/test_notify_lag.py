"""The notifier on the lag findings: their alerts name the group, the partition and its owner,
rules can pick them, and they resolve when the partition's lag status ends (not on a
rebalance), over the real ``partition_lag`` table in ``groupwatch notify``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groupwatch.notify import Notifier, NotifierConfig, load_config
from groupwatch.notify.inputs import AlertSnapshot
from groupwatch.notify.kinds import KINDS, LAG_KINDS
from groupwatch.notify.notifier import payload
from groupwatch.notify.routing import Rule, parse
from groupwatch.tables import FindingRow, PartitionLagRow
from tests.dashboard import lag_scenario as ls
from tests.dashboard.scenario import write

ROOT = Path(__file__).resolve().parents[2]
LAG = ("consumer_stopped", "consumer_stalled", "offset_rewound", "consumer_lagging")
RULES = NotifierConfig(rules=(Rule("consumer-lag", kinds=LAG), Rule("all")))
OWNER = {"owner_client": "billing-2", "owner_host": "/10.0.3.7", "owner_generation": 41}


def lag_finding_columns(
    fid: str, kind: str = "consumer_stopped", partition: int = 3, member: str | None = "c-2-8f"
) -> dict[str, Any]:
    """A lag finding's columns, as the table holds them."""
    return {
        "finding_id": fid,
        "kind": kind,
        "severity": KINDS[kind][0],
        "group": "billing",
        "generation": None,
        "topic": "orders",
        "partition": partition,
        "member": member,
        "detail": f"orders-{partition} of billing has not moved for 6 min 12 s",
        "evidence": json.dumps({"lag_records": 41250, "lag_seconds": 372.0, **OWNER}),
    }


def lag_finding(
    fid: str, kind: str = "consumer_stopped", partition: int = 3, member: str | None = "c-2-8f"
) -> FindingRow:
    return FindingRow(**lag_finding_columns(fid, kind, partition, member))


def lag_row(partition: int, status: str) -> PartitionLagRow:
    return PartitionLagRow(group="billing", topic="orders", partition=partition, status=status)


def test_the_lag_kinds_are_known_with_the_contracts_severities() -> None:
    assert set(LAG) <= set(KINDS)
    assert KINDS["consumer_stopped"][0] == "error"
    assert all(KINDS[k][0] in ("critical", "error", "warning") for k in LAG)
    assert set(LAG_KINDS) == set(LAG)
    # Rules may name them; the shipped configuration routes them.
    assert parse({"rule": [{"name": "lag", "kinds": list(LAG)}]}).rules[0].kinds == LAG
    shipped = load_config(ROOT / "conf" / "alerts.toml")
    lag_rule = next(r for r in shipped.rules if r.name == "consumer-lag")
    assert set(lag_rule.kinds) == set(LAG)


@pytest.mark.parametrize("kind", LAG)
def test_a_lag_alert_names_group_partition_and_owner(kind: str) -> None:
    n = Notifier(RULES)
    (alert,) = n.process([lag_finding("f1", kind)])
    assert (alert.rule, alert.group, alert.topic, alert.partition) == (
        "consumer-lag",
        "billing",
        "orders",
        3,
    )
    assert (alert.member, alert.owner_client, alert.owner_host, alert.generation) == (
        "c-2-8f",
        "billing-2",
        "/10.0.3.7",
        41,
    )
    body = payload([alert], n.config, "alertmanager")
    labels = body["alerts"][0]["labels"]
    assert labels["consumer_group"] == "billing" and labels["topic"] == "orders"
    assert labels["partition"] == "3" and labels["member"] == "c-2-8f"
    assert labels["owner_client"] == "billing-2" and labels["owner_host"] == "/10.0.3.7"
    expected = (
        "orders-3, owned by member c-2-8f (client billing-2, host /10.0.3.7) at generation 41"
    )
    assert expected in body["text"]
    assert expected in body["alerts"][0]["annotations"]["summary"]
    assert "generation" not in alert.link and "group=billing" in alert.link
    assert "assignment" not in body["alerts"][0]["annotations"]["runbook"].lower()


def test_an_unowned_partition_says_so() -> None:
    (alert,) = Notifier(RULES).process([lag_finding("f1", member=None)])
    assert "orders-3, owned by no member" in payload([alert], RULES, "slack")["text"]


def test_lag_alerts_resolve_when_the_status_ends_not_on_a_rebalance() -> None:
    n = Notifier(RULES)
    n.process([lag_finding("stop", partition=3), lag_finding("lag", "consumer_lagging", 4)])
    # A rebalance (a new generation) does not end a stop.
    snap = AlertSnapshot("billing", 42, tombstone=False, source_offset=1)
    assert n.process([], [snap]) == []
    # Still stopped, and rows of other partitions: nothing resolves.
    assert n.process([], [], [lag_row(3, "stopped"), lag_row(4, "lagging")]) == []
    # Rows of a batch that did not judge partition 4: it stays open.
    events = n.process([], [], [lag_row(3, "ok")])
    assert [(e.finding_id, e.status) for e in events] == [("stop", "resolved")]
    assert [a.finding_id for a in n.active()] == ["lag"]
    # The whole table without the partition (its offsets deleted): resolved.
    events = n.process([], [], [lag_row(3, "ok")], whole_lag=True)
    assert [(e.finding_id, e.status) for e in events] == [("lag", "resolved")]
    assert n.active() == []


def test_a_lag_alert_does_not_hold_the_groups_other_alerts_open() -> None:
    n = Notifier(NotifierConfig(rules=(Rule("all"),)))
    overlap = dataclasses.replace(lag_finding("ov", "consumer_stopped"), kind="assignment_overlap",
                                  severity="critical", generation=41)  # fmt: skip
    n.process([overlap, dataclasses.replace(lag_finding("stop"), generation=42)])
    snap = AlertSnapshot("billing", 42, tombstone=False, source_offset=1)
    # Generation 42 is healthy for the assignment: the overlap of 41 resolves, the stop stays.
    assert [(e.finding_id, e.status) for e in n.process([], [snap])] == [("ov", "resolved")]
    assert [a.finding_id for a in n.active()] == ["stop"]


def test_notify_command_resolves_from_the_partition_lag_table(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    root = tmp_path / "delta"
    finding = {
        **lag_finding_columns("f-stop"),
        "generation": 41,
        "members": ["c-2-8f"],
        "detected_at": now,
        "source": {"topic": "__consumer_offsets", "partition": 1, "offset": 7, "timestamp": 0},
    }
    write(root, "findings", [finding])
    rules = tmp_path / "alerts.toml"
    rules.write_text(
        '[notifier]\nstate_file = "%s"\nlog = true\n[[rule]]\nname = "consumer-lag"\n'
        'kinds = ["consumer_stopped"]\n' % (tmp_path / "state.json")
    )

    def notify() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "groupwatch.cli", "notify", "--delta-root", str(root),
             "--rules", str(rules), "--once"],
            capture_output=True, text=True, cwd=ROOT, check=True, timeout=120,
        )  # fmt: skip
        return done.stdout + done.stderr

    # No partition_lag table yet (a job before lag): the alert fires and stays open.
    out = notify()
    assert "1 new alert(s), 0 resolved, 1 open" in out
    assert "orders-3, owned by member c-2-8f (client billing-2, host /10.0.3.7)" in out
    own = ("c-2-8f", "billing-2", "/10.0.3.7", 41)
    write(root, "partition_lag", [ls.partition("billing", "orders", 3, 0, 500, 400.0,
                                               "stopped", now, owner=own)])  # fmt: skip
    assert "0 new alert(s), 0 resolved, 1 open" in notify()
    write(root, "partition_lag", [ls.partition("billing", "orders", 3, 500, 500, 0.0,
                                               "ok", now, owner=own)])  # fmt: skip
    assert "0 new alert(s), 1 resolved, 0 open" in notify()
