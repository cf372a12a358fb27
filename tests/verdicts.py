"""Verdicts on healthy real groups (``tests/fleet``, ``tests/modern``): their dump and the story
of their lives, what ``groupwatch analyze`` and the job found for each group, and the assertion
that none of it is above ``info``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from groupwatch import config
from tests.realgroups import table

ALARMS = ("critical", "error", "warning")

Findings = dict[str, list[dict[str, Any]]]


class Life(Protocol):
    """What happened to one group: its steps, and why its life was cut short (or None)."""

    events: list[str]
    error: str | None


def write_dump(records: list[dict[str, Any]], work: Path, keep: str) -> Path:
    """The ``groupwatch analyze`` input lines of ``records`` in a file under ``work``, copied to
    the file the environment variable ``keep`` names, if set."""
    dump = work / "consumer-offsets.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    if os.environ.get(keep):
        shutil.copyfile(dump, os.environ[keep])
    return dump


def print_life(title: str, life: Life) -> None:
    print(f"  {title}")
    for event in life.events:
        print(f"    {event}")
    if life.error:
        print(f"    FAILED: {life.error}")


@dataclass(frozen=True)
class Analysis:
    """``groupwatch analyze``'s findings per group, and what it wrote on standard error."""

    findings: Findings = field(repr=False)
    stderr: str = field(repr=False)


def analyze(dump: Path, broker: str, *settings: str, extra: tuple[str, ...] = ()) -> Analysis:
    """``groupwatch analyze DUMP --bootstrap-server BROKER [EXTRA...]`` (``--set`` each of
    ``settings``), in this process."""
    from groupwatch.cli import main

    sets = [arg for setting in settings for arg in ("--set", setting)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["analyze", str(dump), "--bootstrap-server", broker, *sets, *extra])
    assert rc == 0, err.getvalue()
    found: Findings = defaultdict(list)
    for line in out.getvalue().splitlines():
        f = json.loads(line)
        found[f["group"]].append(f)
    return Analysis(found, err.getvalue())


@dataclass(frozen=True)
class JobTables:
    """The job's findings per group, and its quarantine rows per group (None: no group)."""

    findings: Findings = field(repr=False)
    quarantine: dict[str | None, list[dict[str, Any]]] = field(repr=False)


def read_job_tables(spark, cfg: config.Config) -> JobTables:  # type: ignore[no-untyped-def]
    """The findings and quarantine tables of the job ``cfg`` sets up."""
    findings: Findings = defaultdict(list)
    for row in table(spark, cfg, "findings").collect():
        f = row.asDict()
        f["evidence"] = json.loads(f["evidence"]) if f["evidence"] else {}
        findings[f["group"]].append(f)
    quarantine: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for row in table(spark, cfg, "quarantine").collect():
        q = row.asDict()
        quarantine[q["group"] or None].append(q)
    return JobTables(findings, quarantine)


# -- reporting -----------------------------------------------------------------------------------
def _evidence(evidence: Mapping[str, Any], limit: int = 600) -> str:
    text = json.dumps(evidence, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def describe(f: Mapping[str, Any]) -> str:
    return (
        f"{f['group']} g{f['generation']} {f['severity']} {f['kind']}: {f['detail']}\n"
        f"      evidence: {_evidence(f.get('evidence') or {})}"
    )


def describe_quarantine(q: Mapping[str, Any]) -> str:
    value = q.get("value")
    return (
        f"{q['group']} quarantined at {q['stage']}/{q['error_kind']} "
        f"{q['field_path']} byte {q['byte_offset']}: {q['message']} "
        f"(record {q['source_partition']}:{q['source_offset']}, "
        f"value {bytes(value).hex() if value is not None else None})"
    )


# -- the verdicts --------------------------------------------------------------------------------
def verdict(group: str, about: str, findings: list[dict[str, Any]], what: str) -> None:
    """No finding of ``what`` above ``info`` on the healthy ``group`` (``about``: what it is);
    the info findings are printed."""
    info = [f for f in findings if f["severity"] == "info"]
    if info:
        print(f"\n{group} ({about}): info findings of {what}:")
        for f in info:
            print("  " + describe(f))
    alarms = sorted(
        (f for f in findings if f["severity"] in ALARMS),
        key=lambda f: (f["generation"] if f["generation"] is not None else -1, f["kind"]),
    )
    assert not alarms, (
        f"{what} raised {len(alarms)} alarm(s) on the healthy group {group} ({about}):\n"
        + "\n".join("  " + describe(f) for f in alarms)
    )


def job_verdict(group: str, about: str, tables: JobTables) -> None:
    """The job's verdict on ``group``: no finding above ``info`` and nothing quarantined."""
    problems = []
    try:
        verdict(group, about, tables.findings.get(group, []), "groupwatch run --once")
    except AssertionError as exc:
        problems.append(str(exc))
    quarantined = tables.quarantine.get(group, [])
    if quarantined:
        problems.append(
            f"groupwatch run --once quarantined {len(quarantined)} record(s) of {group}:\n"
            + "\n".join("  " + describe_quarantine(q) for q in quarantined[:20])
        )
    assert not problems, "\n".join(problems)
