"""The built-in notifier: rules, de-duplication, resolution, and webhooks that misbehave."""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from groupwatch.notify import Notifier, NotifierConfig, load_config
from groupwatch.notify.inputs import AlertSnapshot
from groupwatch.notify.notifier import payload
from groupwatch.notify.routing import NotifyConfigError, Rule, Webhook, parse
from groupwatch.tables import FindingRow
from tests.dashboard.receivers import receiver

ROOT = Path(__file__).resolve().parents[2]


def finding(
    fid: str,
    kind: str = "assignment_overlap",
    severity: str = "critical",
    group: str = "orders-etl",
    generation: int = 3,
    **kw: Any,
) -> FindingRow:
    return FindingRow(
        finding_id=fid,
        kind=kind,
        severity=severity,
        group=group,
        generation=generation,
        topic="orders",
        partition=0,
        member=None,
        detail=f"{kind} in {group}",
        **kw,
    )


def snap(group: str, generation: int | None, offset: int, tombstone: bool = False) -> AlertSnapshot:
    return AlertSnapshot(
        group=group,
        generation=generation,
        tombstone=tombstone,
        source_offset=offset,
        source_timestamp=dt.datetime(2026, 1, 1, 0, 0, offset, tzinfo=dt.UTC),
    )


def cfg(*hooks: Webhook, **kw: Any) -> NotifierConfig:
    return NotifierConfig(webhooks=hooks, **kw)


def test_shipped_config_parses() -> None:
    c = load_config(ROOT / "conf" / "alerts.toml")
    assert [r.name for r in c.rules][:1] == ["critical-finding"]
    assert c.dashboard_url.startswith("http://127.0.0.1")


def test_config_errors_name_the_key() -> None:
    with pytest.raises(NotifyConfigError, match="severities"):
        parse({"rule": [{"name": "x", "severities": ["fatal"]}]})
    with pytest.raises(NotifyConfigError, match="kinds"):
        parse({"rule": [{"name": "x", "kinds": ["no_such_kind"]}]})
    with pytest.raises(NotifyConfigError, match="format"):
        parse({"webhook": [{"url": "http://127.0.0.1:1/", "format": "teams"}]})
    with pytest.raises(NotifyConfigError, match="unknown section"):
        parse({"notifierr": {}})


def test_rule_matching() -> None:
    r = Rule("r", severities=("warning",), kinds=("stale_claim_honored",), groups=("orders-*",))
    assert r.matches(finding("a", "stale_claim_honored", "warning"))
    assert not r.matches(finding("a", "stale_claim_honored", "warning", group="pay"))
    assert not r.matches(finding("a"))


def test_fires_once_per_finding_id_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    n = Notifier(cfg())
    caplog.set_level(logging.INFO, logger="groupwatch.alerts")
    first = n.process([finding("f1"), finding("f1"), finding("w", "info_only", "info")])
    assert [(a.finding_id, a.status) for a in first] == [("f1", "firing")]
    assert n.process([finding("f1")]) == []
    assert "FIRING" in caplog.text and "orders-etl" in caplog.text
    assert "group=orders-etl&generation=3" in first[0].link


def test_resolved_by_a_later_healthy_generation_only() -> None:
    n = Notifier(cfg())
    n.process([finding("f1", generation=3)], [snap("orders-etl", 3, 1)])
    # generation 4 still has a matching finding: the alert of generation 3 stays open
    assert (
        n.process([finding("f2", generation=4)], [snap("orders-etl", 4, 2)])[0].status == "firing"
    )
    assert len(n.active()) == 2
    # another group's healthy generation resolves nothing here
    assert n.process([], [snap("payments", 9, 3)]) == []
    events = n.process([], [snap("orders-etl", 5, 4)])
    assert sorted((e.finding_id, e.status) for e in events) == [
        ("f1", "resolved"),
        ("f2", "resolved"),
    ]
    assert n.active() == []


def test_tombstone_resolves() -> None:
    n = Notifier(cfg())
    n.process([finding("f1")])
    assert [e.status for e in n.process([], [snap("orders-etl", None, 5, tombstone=True)])] == [
        "resolved"
    ]


def test_state_file_survives_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    n = Notifier(cfg(state_file=str(state)))
    n.process([finding("f1")])
    n.close()
    again = Notifier(cfg(state_file=str(state)))
    assert again.process([finding("f1")]) == []
    assert [a.finding_id for a in again.active()] == ["f1"]
    assert [e.status for e in again.process([], [snap("orders-etl", 4, 1)])] == ["resolved"]


def test_payload_is_alertmanager_and_slack_shaped() -> None:
    n = Notifier(cfg())
    events = n.process([finding("f1")])
    body = payload(events, n.config, "alertmanager")
    assert body["version"] == "4" and body["status"] == "firing"
    alert = body["alerts"][0]
    assert alert["labels"]["alertname"] == "GroupwatchCriticalFinding"
    assert alert["labels"]["consumer_group"] == "orders-etl"
    assert alert["annotations"]["runbook"] and alert["annotations"]["dashboard"]
    assert alert["endsAt"].startswith("0001-") and "orders-etl" in body["text"]
    assert set(payload(events, n.config, "slack")) == {"text"}


def test_delivers_firing_then_resolved_to_a_receiver() -> None:
    with receiver("ok") as r:
        n = Notifier(cfg(Webhook(r.url, timeout_seconds=2, retries=0)))
        n.process([finding("f1")])
        n.process([], [snap("orders-etl", 4, 1)])
        assert n.close(timeout=10)
        statuses = [b["status"] for b in r.wait(2)]
    assert statuses == ["firing", "resolved"]
    assert r.bodies[0]["alerts"][0]["labels"]["finding_id"] == "f1"


def test_a_hanging_receiver_never_blocks_the_caller() -> None:
    with receiver("hang") as hang, receiver("ok") as ok:
        n = Notifier(
            cfg(
                Webhook(hang.url, timeout_seconds=0.5, retries=1, backoff_seconds=0.1),
                Webhook(ok.url, timeout_seconds=2, retries=0),
            )
        )
        start = time.monotonic()
        for i in range(20):
            n.process([finding(f"f{i}", generation=i)])
        assert time.monotonic() - start < 0.5, "process() waited for a webhook"
        assert len(ok.wait(20)) == 20, "a slow receiver held up another"
        n.close(timeout=1)
        assert hang.attempts >= 1


def test_a_failing_receiver_is_retried_a_bounded_number_of_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with receiver("fail") as r:
        n = Notifier(cfg(Webhook(r.url, timeout_seconds=1, retries=2, backoff_seconds=0.05)))
        n.process([finding("f1")])
        assert n.close(timeout=5)
    assert r.attempts == 3
    assert n._senders[0].failed == 1 and "gave up" in caplog.text


def test_an_unreachable_receiver_is_logged_not_raised() -> None:
    n = Notifier(cfg(Webhook("http://127.0.0.1:9/none", timeout_seconds=0.5, retries=0)))
    n.process([finding("f1")])
    assert n.close(timeout=5)
    assert n._senders[0].failed == 1


def test_a_batchs_snapshots_are_taken_in_stream_order() -> None:
    # Handed out of order: resolved in the order the snapshots were written (by time, then
    # offset), a snapshot without a time first.
    n = Notifier(cfg())
    n.process([finding("a", group="orders-etl"), finding("b", group="payments"),
               finding("c", group="billing"), finding("d", group="audit")])  # fmt: skip
    late, early = snap("orders-etl", 4, 5), snap("payments", 4, 2)
    same_time = AlertSnapshot("audit", 4, source_timestamp=early.source_timestamp, source_offset=1)
    untimed = AlertSnapshot("billing", 4, source_offset=99)
    events = n.process([], [late, early, untimed, same_time])
    assert [e.finding_id for e in events] == ["c", "d", "b", "a"]


def test_notify_once_over_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from groupwatch.cli import main
    from tests.dashboard.scenario import build

    build(tmp_path / "delta")
    rules = tmp_path / "alerts.toml"
    with receiver("ok") as r:
        rules.write_text(
            f'[notifier]\nstate_file = "{tmp_path / "state.json"}"\n'
            '[[rule]]\nname = "critical-finding"\nseverities = ["critical"]\n'
            '[[rule]]\nname = "warnings"\nseverities = ["warning"]\n'
            f'[[webhook]]\nurl = "{r.url}"\ntimeout_seconds = 2\n'
        )
        args = ["notify", "--once", "--delta-root", str(tmp_path / "delta"), "--rules", str(rules)]
        assert main(args) == 0
        body = r.wait(1)[0]
        assert main(args) == 0  # nothing new the second time
    fired = {
        (a["labels"]["consumer_group"], a["labels"]["kind"], a["status"]) for a in body["alerts"]
    }
    assert ("orders-etl", "assignment_overlap", "firing") in fired
    # billing's generation-4 warning was cleared by generation 5 in the same evaluation
    assert ("billing", "imbalanced_assignment", "resolved") in fired
    assert "0 new alert(s)" in capsys.readouterr().out.splitlines()[-1]
    assert json.loads((tmp_path / "state.json").read_text())["active"]
