"""Alerts from findings: one per finding id, resolved by a later healthy generation (a lag
finding: when its partition's lag status ends).

The streaming job calls ``Notifier(config).process(findings_rows, snapshot_rows)`` once per
micro-batch with the rows it just wrote, as typed values (``FindingRow``, ``AlertSnapshot``:
``notify/inputs.py``, where its callers convert the rows they read).  A finding that
matches a rule fires an alert once, whatever how often it is seen; the alert resolves when a
later generation of the same group arrives with no matching finding, or the group is deleted.
Findings of a snapshot must come in the same call as the snapshot (the job writes them in the
same batch), else that generation counts as healthy.

A lag finding (``consumer_stopped``, ``consumer_stalled``, ``offset_rewound``,
``consumer_lagging``) is about a partition's state, not a generation: a rebalance does not end
a stop.  Its alert resolves when ``partition_lag`` rows passed to :meth:`Notifier.process` show
its partition in another status (or, given the whole table, no longer there: its offsets were
deleted), or when the group is deleted.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from groupwatch.notify.delivery import WebhookSender
from groupwatch.notify.inputs import AlertSnapshot
from groupwatch.notify.kinds import LAG_STATUS, explanation_of, rank
from groupwatch.notify.routing import NotifierConfig
from groupwatch.tables import FindingRow, PartitionLagRow

log = logging.getLogger("groupwatch.alerts")
_MAX_SEEN = 200_000
ZERO_TIME = "0001-01-01T00:00:00Z"
RUNBOOK = (
    "Open the dashboard link, check which members share or claim the partition, and "
    "restart the stale member (or the whole group) if two consumers process it."
)
#: A lag alert's runbook: what to look at first on the owner named in the alert.
LAG_RUNBOOKS = {
    "consumer_stopped": "Check the owner (member, client, host in the alert): is the process "
    "alive, paused or hung? Restart it; the partition is reassigned once it leaves the group.",
    "consumer_stalled": "The owner commits without moving: look in its logs for a record it "
    "keeps failing on (a poison message, a retry loop) and skip or fix it.",
    "offset_rewound": "Someone or something moved the offset back: check resets and seeks on "
    "the owner; the records after the new offset are consumed again.",
    "consumer_lagging": "The owner is slower than the producers: add consumers (up to the "
    "partitions), speed up processing, or check the owner's host for contention.",
}


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
    #: A lag finding's owner beyond its member id (from the finding's evidence).
    owner_client: str | None = None
    owner_host: str | None = None


def _opt_int(v: Any) -> int | None:
    try:
        return None if v is None or v != v else int(v)
    except (TypeError, ValueError):
        return None


def _opt_str(v: Any) -> str | None:
    return None if v is None or v != v or v == "" else str(v)


def _evidence(value: str | None) -> dict[str, Any]:
    """A finding's evidence (JSON text); ``{}`` when unreadable."""
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def where(a: Alert) -> str:
    """Which partition and owner a lag alert is about, as people read it:
    ``orders-3, owned by member consumer-2-8f (client billing-2, host /10.0.3.7) at
    generation 41``; nobody owns it: ``orders-3, owned by no member``."""
    part = f"{a.topic}-{a.partition}" if a.topic is not None else "?"
    if not a.member:
        return f"{part}, owned by no member"
    more = ", ".join(
        x for x in (f"client {a.owner_client}" if a.owner_client else "",
                    f"host {a.owner_host}" if a.owner_host else "") if x
    )  # fmt: skip
    gen = f" at generation {a.generation}" if a.generation is not None else ""
    return f"{part}, owned by member {a.member}" + (f" ({more})" if more else "") + gen


def _stream_order(s: AlertSnapshot) -> tuple[float, int]:
    """A batch's snapshots in the order they were written: by record time, then offset (a
    snapshot without a time first)."""
    t = s.source_timestamp
    return (float("-inf") if t is None else t.timestamp(), s.source_offset or 0)


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
        self,
        findings_rows: Iterable[FindingRow],
        snapshot_rows: Iterable[AlertSnapshot] = (),
        lag_rows: Iterable[PartitionLagRow] | None = None,
        *,
        whole_lag: bool = False,
    ) -> list[Alert]:
        """New firing and resolved alerts for these rows; delivered in the background.

        ``lag_rows``: ``partition_lag`` rows (of the groups the batch judged, or the whole table
        with ``whole_lag``: then a lag alert whose partition is not in it resolves too)."""
        events: list[Alert] = []
        for f in findings_rows:
            fid = f.finding_id or ""
            if not fid or fid in self._seen:
                continue
            self._remember(fid)
            rule = next((r for r in self.config.rules if r.matches(f)), None)
            if rule is None:
                continue
            alert = self._alert(f, fid, rule.name)
            self._active.setdefault(alert.group, {})[fid] = alert
            # A lag finding's generation is its owner's: it says nothing of the generation's
            # assignment, so it neither marks it bad nor is resolved by a later one.
            if alert.generation is not None and alert.kind not in LAG_STATUS:
                self._bad.setdefault(alert.group, set()).add(alert.generation)
            events.append(alert)
        for s in sorted(snapshot_rows, key=_stream_order):
            events += self._resolve(s)
        if lag_rows is not None:
            events += self._resolve_lag(lag_rows, whole_lag)
        if events:
            self._emit(events)
        return events

    def groups_to_resolve(self, findings_rows: Iterable[FindingRow]) -> set[str]:
        """The groups whose snapshots :meth:`process` could act on with these findings: those
        with an open alert, and those of findings it has not seen (which may open one).  A
        reader of a long ``group_snapshots`` history reads these groups' rows only."""
        groups = set(self._active)
        for f in findings_rows:
            if f.finding_id and f.finding_id not in self._seen and f.group:
                groups.add(f.group)
        return groups

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

    def _resolve_lag(self, rows: Iterable[PartitionLagRow], whole: bool) -> list[Alert]:
        """Lag alerts whose partition's status in ``rows`` is no longer theirs."""
        status = {(str(r.group), str(r.topic), r.partition): r.status for r in rows}
        out = []
        for group, open_ in list(self._active.items()):
            for fid, a in list(open_.items()):
                want = LAG_STATUS.get(a.kind)
                if want is None:
                    continue
                key = (group, str(a.topic), a.partition)
                if key in status:
                    if status[key] == want:
                        continue
                elif not whole:
                    continue
                open_.pop(fid)
                a.status, a.ends_at = "resolved", _now()
                out.append(a)
            if not open_:
                self._active.pop(group, None)
                self._bad.pop(group, None)
        return out

    def _link(self, group: str, generation: int | None) -> str:
        q = [("group", group)] + (
            [("generation", str(generation))] if generation is not None else []
        )
        return f"{self.config.dashboard_url}/group?{urlencode(q)}"

    def _alert(self, f: FindingRow, fid: str, rule: str) -> Alert:
        group = f.group or ""
        gen = f.generation
        kind = f.kind or ""
        owner: dict[str, Any] = {}
        if kind in LAG_STATUS:
            ev = _evidence(f.evidence)
            owner = {
                "owner_client": _opt_str(ev.get("owner_client")),
                "owner_host": _opt_str(ev.get("owner_host")),
            }
            # The owner's generation (or member epoch) when the finding does not carry one.
            gen = gen if gen is not None else _opt_int(ev.get("owner_generation"))
        return Alert(
            finding_id=fid,
            rule=rule,
            status="firing",
            kind=kind,
            severity=f.severity or "warning",
            group=group,
            generation=gen,
            detail=f.detail or "",
            topic=f.topic,
            partition=f.partition,
            member=f.member,
            starts_at=_now(),
            ends_at=ZERO_TIME,
            # A lag alert links to the group as it is now (its lag table), not a generation.
            link=self._link(group, None if kind in LAG_STATUS else gen),
            **owner,
        )

    def _resolve(self, s: AlertSnapshot) -> list[Alert]:
        group = s.group
        open_ = self._active.get(group)
        if not open_:
            return []
        gen = s.generation
        if s.tombstone:
            done = list(open_)
        elif gen is None or gen in self._bad.get(group, set()):
            return []
        else:
            done = [
                fid
                for fid, a in open_.items()
                if a.kind not in LAG_STATUS and (a.generation is None or a.generation < gen)
            ]
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
                if a.kind in LAG_STATUS:
                    log.log(
                        level,
                        "[%s] %s %s/%s group=%s partition %s: %s %s",
                        a.status.upper(),
                        a.rule,
                        a.severity,
                        a.kind,
                        a.group,
                        where(a),
                        a.detail,
                        a.link,
                    )
                    continue
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
        if a.kind in LAG_STATUS:
            lines.append(
                f"{icon} *{a.kind}* in group `{a.group}`, partition {where(a)}: "
                f"{a.detail} <{a.link}|dashboard>"
            )
            continue
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
                ("owner_client", a.owner_client),
                ("owner_host", a.owner_host),
                ("finding_id", a.finding_id),
            )
            if v is not None
        }
        alerts.append(
            {
                "status": a.status,
                "labels": labels,
                "annotations": {
                    "summary": f"{a.detail} ({where(a)})" if a.kind in LAG_STATUS else a.detail,
                    "description": explanation_of(a.kind),
                    "runbook": LAG_RUNBOOKS.get(a.kind, RUNBOOK),
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
