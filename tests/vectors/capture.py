"""Capture the record corpus: what a real broker writes to ``__consumer_offsets``.

Starts a fresh local broker (the project's, :mod:`groupwatch_dev.broker`), runs real groups of every
kind on it -- Kafka's Java client on the classic protocol (eager and cooperative) and on the
``consumer`` protocol (explicit topics, a broker-side regex, a classic member inside a consumer
group, an online upgrade), share groups, Kafka Streams on the classic and the ``streams``
protocol, a Kafka Connect distributed worker -- then dumps the topic and writes one JSON-lines
file per kind of group under ``tests/vectors/captured/``, plus ``manifest.json`` (versions,
record counts). Offset commits are trimmed (see :func:`trim`); every other record is kept.

    .venv/bin/python -m tests.vectors.capture [--out DIR] [--only SCENARIO ...]
    .venv/bin/python -m tests.vectors.capture --fleet /path/to/dump.jsonl   # import only

``--fleet`` adds the groups of other client libraries from a dump in the same JSON-lines format
(``fleet.jsonl``) without capturing anything else. Takes about five minutes on two cores.
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from groupwatch import paths
from groupwatch.protocol import decode_record
from groupwatch_dev.broker import LocalBroker
from tests.realgroups import dump_consumer_offsets

ROOT = Path(__file__).resolve().parent / "captured"
PREFIX = "capture-"
KAFKA_VERSION = "4.3.1"

# Java-side scenarios, in the order they run (groupwatch.capture.CaptureGroups).
JAVA_SCENARIOS = (
    "classic-eager",
    "classic-cooperative",
    "consumer",
    "consumer-regex",
    "consumer-mixed",
    "consumer-upgrade",
    "deleted",
    "share",
    "connect",
)
# Kafka Streams groups (groupwatch.fleet.StreamsApp), by group.protocol.
STREAMS_SCENARIOS = {"streams-classic": "classic", "streams": "streams"}

# Which corpus file a group's records go to, by the group id after PREFIX.
KINDS = (
    ("classic", re.compile(r"(classic-(eager|cooperative)|deleted-classic)$")),
    ("consumer", re.compile(r"(consumer(-regex|-mixed|-upgrade)?|deleted-consumer)$")),
    ("share", re.compile(r"share$")),
    ("streams", re.compile(r"streams$")),
    ("streams-classic", re.compile(r"streams-classic$")),
    # the worker group, and the consumer group Connect runs for the sink connector's tasks
    ("connect", re.compile(r"connect$|connect-sink$")),
)
FLEET_GROUPS = re.compile(r"fleet-(rdkafka|kpy|go)-")

# Offset commits per (group, topic, partition) kept: the first ones and the last one.
KEEP_FIRST_COMMITS = 2


def log(msg: str) -> None:
    print(f"[capture] {msg}", flush=True)


def java() -> str:
    exe = shutil.which("java")
    if exe is None:
        sys.exit("java is not on PATH; run scripts/setup")
    return exe


def classpath() -> str:
    jars = paths.jars_dir("kafka")
    for name in ("groupwatch-oracle.jar", f"connect-runtime-{KAFKA_VERSION}.jar"):
        if not (jars / name).exists():
            sys.exit(f"{jars / name} is missing; run scripts/setup")
    return f"{jars}/*"


def run_java_scenario(bootstrap: str, scenario: str, work: Path) -> None:
    t0 = time.monotonic()
    log(f"{scenario} ...")
    proc = subprocess.run(
        [java(), "-Xmx512m", "-Dlog4j2.level=WARN", "-cp", classpath(),
         "groupwatch.capture.CaptureGroups", bootstrap, scenario, PREFIX, str(work)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        log(f"  {line}")
    if proc.returncode != 0:
        log(f"  {scenario} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    log(f"{scenario}: {time.monotonic() - t0:.0f} s")


class StreamsInstance:
    """One ``groupwatch.fleet.StreamsApp`` process; its stdout lines are collected."""

    def __init__(self, bootstrap: str, app_id: str, protocol: str, state: Path, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [java(), "-Xmx384m", "-cp", classpath(), "groupwatch.fleet.StreamsApp",
             bootstrap, app_id, "capture-words", protocol, str(state), name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def assigned(self) -> str | None:
        for line in reversed(self.lines):
            if line.startswith("assigned"):
                return line[len("assigned") :].strip()
        return None

    def leave(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("leave\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _streams_settle(what: str, live: list[StreamsInstance], partitions: int) -> None:
    """Until the live instances' active tasks cover every input partition, each has some, and
    nothing changed for two seconds (or a minute passed)."""
    deadline = time.monotonic() + 90
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        owned = [i.assigned() for i in live]
        parts = [p for o in owned if o for p in o.split(",")]
        done = all(owned) and len(parts) == len(set(parts)) == partitions
        if owned != last:
            last, since = owned, time.monotonic()
        elif done and time.monotonic() - since > 2:
            log(f"  settled {what}: {owned}")
            return
        time.sleep(0.2)
    log(f"  unsettled {what}: {last}")


def run_streams_scenario(bootstrap: str, scenario: str, protocol: str, work: Path) -> None:
    t0 = time.monotonic()
    log(f"{scenario} ({protocol}) ...")
    app = PREFIX + scenario
    state = work / scenario
    a = StreamsInstance(bootstrap, app, protocol, state / "a", f"{app}-a")
    _streams_settle("1 instance", [a], 4)
    b = StreamsInstance(bootstrap, app, protocol, state / "b", f"{app}-b")
    _streams_settle("2 instances", [a, b], 4)
    b.leave()
    _streams_settle("after a leave", [a], 4)
    b = StreamsInstance(bootstrap, app, protocol, state / "b", f"{app}-b")
    _streams_settle("back to 2 instances", [a, b], 4)
    b.leave()
    a.leave()
    for i in (a, b):
        errors = [line for line in i.lines if line.startswith("error")]
        if errors:
            log(f"  {i.name}: {errors[:3]}")
    log(f"{scenario}: {time.monotonic() - t0:.0f} s")


def _decoded(rec: dict[str, Any]) -> Any:
    value = rec["value"]
    return decode_record(
        base64.b64decode(rec["key"]), None if value is None else base64.b64decode(value)
    )


def trim(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every record except repeated offset commits: per (group, topic, partition) the first
    ``KEEP_FIRST_COMMITS`` commits, the last one and every tombstone stay. Members commit every
    second; the thousands in between add bytes, not cases."""
    records = list(records)
    commits: dict[tuple[str, str, int], list[int]] = collections.defaultdict(list)
    for i, rec in enumerate(records):
        d = _decoded(rec)
        if d.record_type == "offset_commit" and d.error is None and not d.tombstone:
            commits[(d.key.group, d.key.topic, d.key.partition)].append(i)
    dropped = {i for idx in commits.values() for i in idx[KEEP_FIRST_COMMITS:-1]}
    for i, rec in enumerate(records):
        if i not in dropped:
            yield rec


def kind_of(group: str | None) -> str | None:
    if group is None or not group.startswith(PREFIX) and not group.startswith("connect-" + PREFIX):
        return None
    name = group.removeprefix("connect-").removeprefix(PREFIX)
    for kind, pattern in KINDS:
        if pattern.fullmatch(name):
            return kind
    return None


def write_kind(out: Path, kind: str, records: list[dict[str, Any]]) -> None:
    path = out / f"{kind}.jsonl"
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    log(f"wrote {len(records)} records to {path}")


def counts(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    c: collections.Counter[str] = collections.Counter()
    for rec in records:
        d = _decoded(rec)
        c[d.record_type + (" tombstone" if d.tombstone else "")] += 1
    return dict(sorted(c.items()))


def update_manifest(
    out: Path, files: dict[str, list[dict[str, Any]]], extra: dict[str, Any]
) -> None:
    path = out / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else {"files": {}}
    manifest.update(extra)
    for kind, records in files.items():
        manifest["files"][f"{kind}.jsonl"] = counts(records)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def import_fleet(dump: Path, out: Path) -> None:
    records = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
    keep = [r for r in records if FLEET_GROUPS.match(_decoded(r).group or "")]
    kept = list(trim(keep))
    write_kind(out, "fleet", kept)
    update_manifest(out, {"fleet": kept}, {"fleet_source": "dump of the fleet suite's groups"})


def capture(out: Path, only: list[str] | None) -> None:
    broker = LocalBroker(f"capture-{os.getpid()}")
    t0 = time.monotonic()
    state = broker.start(fresh=True)
    log(f"broker at {state.bootstrap}")
    try:
        with tempfile.TemporaryDirectory(prefix="gw-capture-") as tmp:
            work = Path(tmp)
            run_java_scenario(state.bootstrap, "setup", work)
            for scenario in JAVA_SCENARIOS:
                if not only or scenario in only:
                    run_java_scenario(state.bootstrap, scenario, work)
            for scenario, protocol in STREAMS_SCENARIOS.items():
                if not only or scenario in only:
                    run_streams_scenario(state.bootstrap, scenario, protocol, work)
        time.sleep(2)  # the last leaves' records
        records = dump_consumer_offsets(state.bootstrap)
    finally:
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)
    log(f"dumped {len(records)} records in {time.monotonic() - t0:.0f} s")
    by_kind: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for rec in records:
        kind = kind_of(_decoded(rec).group)
        if kind is not None:
            by_kind[kind].append(rec)
    files = {kind: list(trim(recs)) for kind, recs in by_kind.items()}
    out.mkdir(parents=True, exist_ok=True)
    for kind, recs in sorted(files.items()):
        write_kind(out, kind, recs)
    update_manifest(
        out,
        files,
        {"kafka": KAFKA_VERSION, "captured": time.strftime("%Y-%m-%d"), "java": _java_version()},
    )


def _java_version() -> str:
    proc = subprocess.run([java(), "-version"], capture_output=True, text=True, check=False)
    return (proc.stderr.splitlines() or [""])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT)
    ap.add_argument("--only", nargs="*", help="scenarios to run (default: all)")
    ap.add_argument("--fleet", type=Path, help="import a fleet dump instead of capturing")
    args = ap.parse_args()
    if args.fleet:
        args.out.mkdir(parents=True, exist_ok=True)
        import_fleet(args.fleet, args.out)
    else:
        capture(args.out, args.only)


if __name__ == "__main__":
    main()
