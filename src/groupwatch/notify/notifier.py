"""Alerts from findings: one per finding id, resolved by a later healthy generation.

The streaming job calls ``Notifier(config).process(findings_rows, snapshot_rows)`` once per
micro-batch with the rows it just wrote (dicts, or Spark ``Row`` objects).  A finding that
matches a rule fires an alert once, whatever how often it is seen; the alert resolves when a
later generation of the same group arrives with no matching finding, or the group is deleted.
Findings of a snapshot must come in the same call as the snapshot (the job writes them in the
same batch), else that generation counts as healthy.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from groupwatch.notify.delivery import WebhookSender
from groupwatch.notify.kinds import explanation_of, rank
from groupwatch.notify.routing import NotifierConfig

log = logging.getLogger("groupwatch.alerts")
_MAX_SEEN = 200_000
ZERO_TIME = "0001-01-01T00:00:00Z"
RUNBOOK = (
    "Open the dashboard link, check which members share or claim the partition, and "
    "restart the stale member (or the whole group) if two consumers process it."
)


@dataclass
class Alert:
    finding_id: str
    rule: str
    status: str  # firing | resolved
    kind: str
    severity: str
    group: str
    generation: int | None
    detail: str
    topic: str | None
    partition: int | None
    member: str | None
    starts_at: str
    ends_at: str
    link: str


def _row(obj: Any) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return obj
    as_dict = getattr(obj, "asDict", None)  # pyspark.sql.Row
    if callable(as_dict):
        result: Mapping[str, Any] = as_dict(recursive=True)
        return result
    raise TypeError(f"expected a mapping or a Row, got {type(obj).__name__}")


def _opt_int(v: Any) -> int | None:
    try:
        return None if v is None or v != v else int(v)
    except (TypeError, ValueError):
        return None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Notifier:
    """Turns findings and snapshots into firing/resolved alerts and delivers them."""

    def __init__(self, config: NotifierConfig | None = None) -> None:
        self.config = config or NotifierConfig()
        self._seen: OrderedDict[str, None] = OrderedDict()
        #: group -> finding id -> alert
        self._active: dict[str, dict[str, Alert]] = {}
        #: group -> generations that had a matching finding (while alerts are open)
        self._bad: dict[str, set[int]] = {}
        self._senders = [WebhookSender(h, self.config.queue_size) for h in self.config.webhooks]
        if self.config.state_file:
            self._load(Path(self.config.state_file))

    # -- the API the job calls --------------------------------------------------------------
    def process(
        self, findings_rows: Iterable[Any], snapshot_rows: Iterable[Any] = ()
    ) -> list[Alert]:
        """New firing and resolved alerts for these rows; delivered in the background."""
        events: list[Alert] = []
        for raw in findings_rows:
            f = _row(raw)
            fid = str(f.get("finding_id") or "")
            if not fid or fid in self._seen:
                continue
            self._remember(fid)
            rule = next((r for r in self.config.rules if r.matches(f)), None)
            if rule is None:
                continue
            alert = self._alert(f, rule.name)
            self._active.setdefault(alert.group, {})[fid] = alert
            if alert.generation is not None:
                self._bad.setdefault(alert.group, set()).add(alert.generation)
            events.append(alert)
        snaps = [_row(s) for s in snapshot_rows]
        snaps.sort(
            key=lambda s: (
                str(s.get("source_timestamp") or ""),
                _opt_int(s.get("source_offset")) or 0,
            )
        )
        for s in snaps:
            events += self._resolve(s)
        if events:
            self._emit(events)
        return events

    def active(self) -> list[Alert]:
        return [a for alerts in self._active.values() for a in alerts.values()]

    def close(self, timeout: float = 10.0) -> bool:
        """Flush webhooks (bounded) and save the state; True when everything was delivered."""
        if self.config.state_file:
            self._save(Path(self.config.state_file))
        deadline_each = timeout / max(1, len(self._senders))
        return all([s.close(deadline_each) for s in self._senders])

    # -- internals ------------------------------------------------------------------------------
    def _remember(self, fid: str) -> None:
        self._seen[fid] = None
        while len(self._seen) > _MAX_SEEN:
            self._seen.popitem(last=False)

    def _link(self, group: str, generation: int | None) -> str:
        q = [("group", group)] + (
            [("generation", str(generation))] if generation is not None else []
        )
        return f"{self.config.dashboard_url}/group?{urlencode(q)}"

    def _alert(self, f: Mapping[str, Any], rule: str) -> Alert:
        group = str(f.get("group") or "")
        gen = _opt_int(f.get("generation"))
        return Alert(
            finding_id=str(f["finding_id"]),
            rule=rule,
            status="firing",
            kind=str(f.get("kind") or ""),
            severity=str(f.get("severity") or "warning"),
            group=group,
            generation=gen,
            detail=str(f.get("detail") or ""),
            topic=f.get("topic"),
            partition=_opt_int(f.get("partition")),
            member=f.get("member"),
            starts_at=_now(),
            ends_at=ZERO_TIME,
            link=self._link(group, gen),
        )

    def _resolve(self, s: Mapping[str, Any]) -> list[Alert]:
        group = str(s.get("group") or "")
        open_ = self._active.get(group)
        if not open_:
            return []
        gen = _opt_int(s.get("generation"))
        if s.get("tombstone"):
            done = list(open_)
        elif gen is None or gen in self._bad.get(group, set()):
            return []
        else:
            done = [fid for fid, a in open_.items() if a.generation is None or a.generation < gen]
        out = []
        for fid in done:
            a = open_.pop(fid)
            a.status, a.ends_at = "resolved", _now()
            out.append(a)
        if not open_:
            self._active.pop(group, None)
            self._bad.pop(group, None)
        return out

    def _emit(self, events: list[Alert]) -> None:
        if self.config.log:
            for a in events:
                level = (
                    logging.INFO
                    if a.status == "resolved"
                    else (logging.ERROR if rank(a.severity) == 0 else logging.WARNING)
                )
                log.log(
                    level,
                    "[%s] %s %s/%s group=%s generation=%s: %s %s",
                    a.status.upper(),
                    a.rule,
                    a.severity,
                    a.kind,
                    a.group,
                    a.generation,
                    a.detail,
                    a.link,
                )
        for sender in self._senders:
            sender.submit(payload(events, self.config, sender.hook.format))

    def _save(self, path: Path) -> None:
        data = {
            "seen": list(self._seen)[-_MAX_SEEN:],
            "active": [asdict(a) for a in self.active()],
            "bad": {g: sorted(v) for g, v in self._bad.items()},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".notify-")
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("notifier state %s unreadable (%s): starting afresh", path, exc)
            return
        for fid in data.get("seen", []):
            self._seen[str(fid)] = None
        for a in data.get("active", []):
            alert = Alert(**a)
            self._active.setdefault(alert.group, {})[alert.finding_id] = alert
        self._bad = {g: set(v) for g, v in data.get("bad", {}).items()}


def _text(events: list[Alert]) -> str:
    lines = []
    for a in events:
        icon = (
            ":white_check_mark: RESOLVED"
            if a.status == "resolved"
            else (":rotating_light: " + a.severity.upper())
        )
        lines.append(
            f"{icon} *{a.kind}* in group `{a.group}` generation {a.generation}: "
            f"{a.detail} <{a.link}|dashboard>"
        )
    return "\n".join(lines)


def payload(events: list[Alert], config: NotifierConfig, fmt: str) -> dict[str, Any]:
    """The webhook body: Alertmanager's webhook JSON (v4) plus ``text``, or Slack's only."""
    text = _text(events)
    if fmt == "slack":
        return {"text": text}
    alerts: list[dict[str, Any]] = []
    for a in events:
        labels = {
            k: str(v)
            for k, v in (
                ("alertname", "Groupwatch" + "".join(p.title() for p in a.rule.split("-"))),
                ("rule", a.rule),
                ("severity", a.severity),
                ("kind", a.kind),
                ("consumer_group", a.group),
                ("generation", a.generation),
                ("topic", a.topic),
                ("partition", a.partition),
                ("member", a.member),
                ("finding_id", a.finding_id),
            )
            if v is not None
        }
        alerts.append(
            {
                "status": a.status,
                "labels": labels,
                "annotations": {
                    "summary": a.detail,
                    "description": explanation_of(a.kind),
                    "runbook": RUNBOOK,
                    "dashboard": a.link,
                },
                "startsAt": a.starts_at,
                "endsAt": a.ends_at,
                "generatorURL": a.link,
                "fingerprint": a.finding_id[:16],
            }
        )
    common = (
        {
            k: v
            for k, v in alerts[0]["labels"].items()
            if all(x["labels"].get(k) == v for x in alerts)
        }
        if alerts
        else {}
    )
    return {
        "version": "4",
        "groupKey": '{}:{groupwatch="notifier"}',
        "truncatedAlerts": 0,
        "status": "firing" if any(a.status == "firing" for a in events) else "resolved",
        "receiver": "groupwatch",
        "groupLabels": {},
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": config.dashboard_url,
        "alerts": alerts,
        "text": text,
    }
