"""Alert routing, the notifier's configuration (``conf/alerts.toml``): which findings become
alerts (rules), where alerts are delivered (webhooks) and where their links point.

Not the detection rules (``groupwatch.detect.rules``): those raise findings; these only choose
which findings to tell people about.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupwatch.errors import GroupwatchError
from groupwatch.notify.kinds import KINDS, SEVERITIES
from groupwatch.tables import FindingRow

DEFAULT_PATH = Path("conf") / "alerts.toml"
FORMATS = ("alertmanager", "slack")


class NotifyConfigError(GroupwatchError, ValueError):
    """The alert configuration cannot be used; the message names the key."""


@dataclass(frozen=True)
class Rule:
    name: str
    severities: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def matches(self, finding: FindingRow) -> bool:
        if self.severities and finding.severity not in self.severities:
            return False
        if self.kinds and finding.kind not in self.kinds:
            return False
        group = finding.group or ""
        return not self.groups or any(fnmatch.fnmatchcase(group, g) for g in self.groups)


@dataclass(frozen=True)
class Webhook:
    url: str
    format: str = "alertmanager"
    timeout_seconds: float = 5.0
    retries: int = 2
    backoff_seconds: float = 1.0


@dataclass(frozen=True)
class NotifierConfig:
    rules: tuple[Rule, ...] = (Rule("critical-finding", severities=("critical",)),)
    webhooks: tuple[Webhook, ...] = ()
    dashboard_url: str = "http://127.0.0.1:8050"
    state_file: str = ""
    log: bool = True
    #: Alerts waiting for a webhook beyond this are dropped (oldest first), with a log line.
    queue_size: int = 1000
    extra: Mapping[str, Any] = field(default_factory=dict)


def _strs(where: str, value: Any, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NotifyConfigError(f"{where}: expected a list of strings")
    if allowed is not None:
        bad = [v for v in value if v not in allowed]
        if bad:
            raise NotifyConfigError(f"{where}: unknown {bad}; known: {', '.join(allowed)}")
    return tuple(value)


def parse(data: Mapping[str, Any], where: str = "alerts") -> NotifierConfig:
    known = {"notifier", "rule", "webhook"}
    unknown = set(data) - known
    if unknown:
        raise NotifyConfigError(f"{where}: unknown section(s) {sorted(unknown)}")
    n = dict(data.get("notifier", {}))
    top_keys = {"dashboard_url", "state_file", "log", "queue_size"}
    if set(n) - top_keys:
        raise NotifyConfigError(f"{where}: unknown [notifier] key(s) {sorted(set(n) - top_keys)}")
    rules = []
    for i, r in enumerate(data.get("rule", [])):
        w = f"{where}: rule[{i}]"
        if set(r) - {"name", "severities", "kinds", "groups"}:
            raise NotifyConfigError(f"{w}: unknown key(s) {sorted(set(r) - {'name'})}")
        if not isinstance(r.get("name"), str) or not r["name"]:
            raise NotifyConfigError(f"{w}: a rule needs a name")
        rules.append(
            Rule(
                r["name"],
                _strs(f"{w}.severities", r.get("severities"), SEVERITIES),
                _strs(f"{w}.kinds", r.get("kinds"), tuple(KINDS)),
                _strs(f"{w}.groups", r.get("groups")),
            )
        )
    hooks = []
    for i, h in enumerate(data.get("webhook", [])):
        w = f"{where}: webhook[{i}]"
        if not isinstance(h.get("url"), str) or not h["url"].startswith(("http://", "https://")):
            raise NotifyConfigError(f"{w}.url: expected an http(s) URL")
        fmt = h.get("format", "alertmanager")
        if fmt not in FORMATS:
            raise NotifyConfigError(f"{w}.format: expected one of {FORMATS}, got {fmt!r}")
        hooks.append(
            Webhook(
                h["url"],
                fmt,
                float(h.get("timeout_seconds", 5)),
                int(h.get("retries", 2)),
                float(h.get("backoff_seconds", 1)),
            )
        )
    return NotifierConfig(
        rules=tuple(rules) if "rule" in data else NotifierConfig.rules,
        webhooks=tuple(hooks),
        dashboard_url=str(n.get("dashboard_url", NotifierConfig.dashboard_url)).rstrip("/"),
        state_file=str(n.get("state_file", "")),
        log=bool(n.get("log", True)),
        queue_size=int(n.get("queue_size", 1000)),
    )


def load_config(path: str | Path | None = None) -> NotifierConfig:
    p = Path(path) if path is not None else DEFAULT_PATH
    try:
        with open(p, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        if path is None:
            return NotifierConfig()
        raise NotifyConfigError(f"{p} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise NotifyConfigError(f"{p}: not valid TOML: {exc}") from exc
    return parse(data, str(p))
