"""Benchmark: the live job on fresh tables against the same job on tables aged as weeks of
operation leave them, in one run; and the table-size target over a long live run.

    .venv/bin/python bench/bench_ageing.py [--batches 60] [--rate 200]
        [--age-versions 3000] [--age-seconds-per-batch 5] [--curve-versions 3000]
        [--compare-versions 0] [--target-batches 0] [--probe-every 8]

* live, fresh: a local broker, a producer writing ``--rate`` records/s (1% group metadata of
  50-member sticky / cooperative-sticky groups, 99% offset commits, as ``bench_job.py``) stamped
  with the wall clock; the job (shipped defaults, 1 s trigger, lag polled by a thread beside
  the batches as ``groupwatch run`` does) on a fresh Delta root runs ``--batches`` batches,
  after one commit to every partition of the model (so that the partitions a lag poll judges
  are as many as they stay); wall time per batch and per step, and every 100 batches each
  step's mean, Spark's trigger phases and the driver's memory.
* ageing: a second Delta root is aged with the job's own driver writers (``deltawrite``: the
  appends and MERGEs of a live batch) by ``--age-versions`` commits per table, rows shaped as the
  fresh run wrote them (group names renamed so the live job's groups start as fresh as before),
  the appended tables spread over 30 days of ``snapshot_date``, ``group_state`` kept to its
  newest versions as state maintenance would.  Upkeep takes its turns as the job does, every
  ``upkeep.every_n_batches`` commits, with the log's modification times set as if each commit
  were ``--age-seconds-per-batch`` seconds after the previous one (so log retention works as it
  would at that trigger).
* live, aged: the same job on the aged root, the same number of batches: p50/p95 per step
  against the fresh run.  In both live runs, every ``--probe-every`` seconds a record of a new
  group with an overlapping assignment is produced and timed until its finding is readable
  (record -> finding latency, p50/p95, aged against fresh).
* curve: ``--curve-versions`` ten-row appends to one ``snapshot_date`` partition with delta-rs,
  without upkeep and with it: the median append time per 500 versions (the issue's 18 ms at
  version 30 -> 95 ms at 6,000 measurement, and what upkeep makes of it).
* compare (``--compare-versions`` > 0): one partition aged four ways in step (no upkeep, the
  shipped upkeep, removed files not kept, the log cut back too), then appended to in turn, so
  the machine's load weighs the same on each: append time, log entries, checkpoint size.
* target (``--target-batches`` > 0): the live job, shipped defaults, 1 s trigger, on a fresh
  root for that many batches; then the most data files of any table and partition in the
  current snapshot (target <= 200) and the most ``_delta_log`` entries (target <= 20,000).

Everything goes to a temporary folder; the broker ``ageing`` is started fresh and removed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import logging
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
# Spark's Python workers import groupwatch too, from the environment this process hands
# them: this tree first, or a checkout measured beside another would run the installed
# tree's code in its workers.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
)
sys.path.insert(0, str(ROOT / "bench"))

import bench_job  # noqa: E402
from bench_job import Backlog, bench_config, create_mirror, log  # noqa: E402

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import tables, upkeep  # noqa: E402
from groupwatch.delta import write as deltawrite  # noqa: E402

TOPIC = "ageing-mirror"
AGE_APP = "groupwatch-ageing"
#: The appended tables' rows are spread over this many days of ``snapshot_date``.
AGE_DAYS = 30


# -- the live job, per batch and per step --------------------------------------------------------
def _job_class() -> type[Any]:
    base = bench_job._timed_job_class()

    class StepJob(base):  # type: ignore[misc, valid-type]
        """``bench_job``'s timed job, its steps kept per batch."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.per_batch: list[dict[str, float]] = []

        def process_batch(self, batch: Any, batch_id: int) -> None:
            before = dict(self.phases)
            super().process_batch(batch, batch_id)
            total = self.batch_seconds[-1]
            steps = bench_job.steps_apart(
                {k: v - before.get(k, 0.0) for k, v in self.phases.items()}
            )
            steps["source read + split + rest"] = total - sum(steps.values())
            steps["batch"] = total
            self.per_batch.append(steps)

    return StepJob


def fill_commits(bootstrap: str) -> int:
    """One offset commit for every (group, topic, partition) of the live model, as fast as the
    producer sends them: the job's committed partitions (what a lag poll judges) are then as
    many as they stay.  Without it they grow for hours as the random commits reach partitions
    for the first time (438,200 of them), and so does every poll: a run would measure the
    model filling up, not the job ageing."""
    from kafka import KafkaProducer

    from groupwatch.protocol import OffsetCommitKey, encode_key

    model = Backlog(5_000_000, "live")
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, metrics_enabled=False)
    now_ms = int(time.time() * 1000)
    sent = 0
    try:
        for g, tps in enumerate(model.commit_tps):
            group, partition = model.all_groups[g], model.partition[g]
            for topic, tp in tps:
                key = encode_key(OffsetCommitKey(group, topic, tp))
                value = model.commit_values[sent & 255]
                producer.send(TOPIC, key=key, value=value, partition=partition, timestamp_ms=now_ms)
                sent += 1
        producer.flush()
    finally:
        producer.close()
    return sent


class Producer:
    """``rate`` records per second, stamped with the wall clock, until stopped."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        self.bootstrap, self.rate = bootstrap, rate
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def _run(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            linger_ms=20,
            max_in_flight_requests_per_connection=1,
            metrics_enabled=False,
        )
        stream = iter(Backlog(5_000_000, "live"))
        try:
            while not self.stop.is_set():
                tick = time.monotonic()
                now_ms = int(time.time() * 1000)
                for _ in range(self.rate):
                    key, value, partition, _ts = next(stream)
                    producer.send(
                        TOPIC, key=key, value=value, partition=partition, timestamp_ms=now_ms
                    )
                    self.sent += 1
                producer.flush()
                time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        finally:
            producer.close()


class Prober:
    """Record -> finding latency under the live load: every ``every`` seconds (jittered), a
    group-metadata record of a new group whose two members are both assigned one partition,
    timed from its produce call until its ``assignment_overlap`` row is readable in the
    findings table (``bench_job.await_finding``: polled every 50 ms)."""

    def __init__(self, bootstrap: str, findings: str, label: str, every: float) -> None:
        self.bootstrap, self.findings, self.label, self.every = bootstrap, findings, label, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        #: Each probe's latency, in s.
        self.samples: list[float] = []
        self.missed = 0

    def _run(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap, linger_ms=0, metrics_enabled=False
        )
        i = 0
        try:
            while not self.stop.wait(self.every + random.uniform(-1.0, 1.0)):
                group = f"probe-{self.label}-{i:04d}"
                i += 1
                try:
                    latency = bench_job.send_probe(producer, TOPIC, self.findings, group).latency()
                except RuntimeError:
                    self.missed += 1
                    continue
                self.samples.append(latency)
        finally:
            producer.close()


def latency_line(probes: dict[str, Prober]) -> list[str]:
    """Record -> finding p50 / p95 of each run's probes (the first two, made while the run
    settles, left out) and aged / fresh."""
    lines = ["| record -> finding | probes | p50 | p95 | max |", "|---|---:|---:|---:|---:|"]
    stats = {}
    for label, probe in probes.items():
        seen = probe.samples[2:]
        if not seen:
            lines.append(f"| {label} | 0 (missed {probe.missed}) | | | |")
            continue
        stats[label] = (pct(seen, 0.5), pct(seen, 0.95))
        lines.append(
            f"| {label} | {len(seen)} (missed {probe.missed}) | {stats[label][0]:.2f} s | "
            f"{stats[label][1]:.2f} s | {max(seen):.2f} s |"
        )
    if len(stats) == 2:
        (a50, a95), (b50, b95) = stats.values()
        lines.append(f"| ratio | | {b50 / a50:.2f} | {b95 / a95:.2f} | |")
    return lines


def live_config(bootstrap: str, root: Path, *extra: str) -> config_mod.Config:
    base = bench_config(bootstrap, TOPIC, root, trigger="1 second")
    return config_mod.load(
        ROOT / "conf" / "local.toml",
        env={},
        overrides=[
            f"source.bootstrap_servers={bootstrap}",
            f"source.topic={TOPIC}",
            "source.starting_offsets=latest",
            f"delta.root={base.delta.root}",
            f"checkpoint.root={base.checkpoint.root}",
            f"validation.suites={ROOT / 'conf' / 'expectations'}",
            "metrics.port=0",
            "alerts.rules=",
            "job.trigger_interval=1 second",
            *extra,
        ],
    )


def run_live(
    spark: Any, cfg: config_mod.Config, batches: int, label: str, probe_every: float = 0.0
) -> Any:
    from groupwatch.spark import sinks

    sinks.ensure_tables(spark, cfg)
    job = _job_class().from_config(spark, cfg)
    #: (seconds, RSS of the driver's Python after it in MB) of each poll's judgement.
    job.polls = []
    judge = job.lag.judge_due

    def timed_judge(*args: Any) -> Any:
        began = time.perf_counter()
        judged = judge(*args)
        if judged is not None:
            rss = bench_job.status_kb(os.getpid(), "VmRSS") / 1024
            job.polls.append((time.perf_counter() - began, rss))
        return judged

    job.lag.judge_due = timed_judge
    query = job.writer(once=False).start()
    # As ``groupwatch run`` polls lag: a thread beside the batches (groupwatch.job.runner).
    polling = job.lag_thread()
    filled = time.monotonic()
    log(f"  {label}: {fill_commits(cfg.source.bootstrap_servers):,} commits filled in "
        f"{time.monotonic() - filled:.0f}s")  # fmt: skip
    started = time.monotonic()
    last = 0
    job.prober = None
    if probe_every > 0:
        job.prober = Prober(
            cfg.source.bootstrap_servers, cfg.table_path("findings"), label, probe_every
        )
        job.prober.thread.start()
    try:
        while len(job.per_batch) < batches:
            if not query.isActive:
                raise RuntimeError(f"{label}: the query ended: {query.exception()}")
            time.sleep(1.0)
            if len(job.per_batch) >= last + 100:
                span = job.per_batch[last : last + 100]
                last = len(job.per_batch)
                log(f"  {label}: {last} batches in {time.monotonic() - started:.0f}s")
                log(f"    {label}, the last 100 batches, mean s by step: {_step_means(span)}")
                log(f"    {label}, Spark's trigger phases, mean s: {_trigger_means(query)}")
                log(f"    {label}, memory: {_memory(spark, job)}")
    finally:
        if job.prober is not None:
            job.prober.stop.set()
            job.prober.thread.join(timeout=150)
        polling.stop()
        child = getattr(job.lag.judging, "pid", None)
        if child is not None:
            job.child_rss_mb = bench_job.status_kb(child, "VmRSS") / 1024
        job.lag.close()
        deadline = time.monotonic() + 120
        while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
            time.sleep(0.2)
        query.stop()
        bench_job.flush_batch_log(job)
    log(f"{label}: {len(job.per_batch)} batches in {time.monotonic() - started:.0f}s")
    return job


def _step_means(batches: list[dict[str, float]]) -> str:
    """Each step's mean over ``batches`` (0 where a batch had no such step), costliest first:
    what grows with uptime shows here before the run ends."""
    return _means(batches)


def _trigger_means(query: Any) -> str:
    """Spark's own phases of the last 100 triggers (``durationMs`` of each progress: the
    offsets asked, the plan, the write-ahead log, ``addBatch`` = the job's batch...)."""
    return _means([p.get("durationMs", {}) for p in query.recentProgress], scale=0.001)


def _means(rows: list[dict[str, float]], scale: float = 1.0) -> str:
    keys = {k for r in rows for k in r}
    means = {k: scale * sum(r.get(k, 0.0) for r in rows) / max(1, len(rows)) for k in keys}
    return ", ".join(f"{k} {v:.2f}" for k, v in sorted(means.items(), key=lambda kv: -kv[1]))


def _memory(spark: Any, job: Any) -> str:
    """RSS of the driver's JVM, of this process (the job's driver Python and the producer) and
    of the lag poll's process, if it judges in one."""
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    rss = [bench_job.status_kb(pid, "VmRSS") / 1024 for pid in (jvm, os.getpid())]
    text = f"driver JVM {rss[0]:,.0f} MB, driver Python {rss[1]:,.0f} MB"
    child = getattr(job.lag.judging, "pid", None)
    if child is not None:
        text += f", lag process {bench_job.status_kb(child, 'VmRSS') / 1024:,.0f} MB"
    return text


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def step_table(
    fresh: list[dict[str, float]],
    aged: list[dict[str, float]],
    names: tuple[str, str] = ("fresh", "aged"),
) -> list[str]:
    """Per step: p50 and p95 fresh, aged, and aged / fresh (batches with Python work only,
    the first 5 of each run, Spark's warm-up, left out)."""
    a, b = names
    lines = [
        f"| step | {a} p50 | {a} p95 | {b} p50 | {b} p95 | p50 ratio | p95 ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    fresh, aged = fresh[5:], aged[5:]
    steps = sorted({k for b in fresh + aged for k in b}, key=lambda k: (k == "batch", k))
    for step in steps:
        f = [b.get(step, 0.0) for b in fresh]
        a = [b.get(step, 0.0) for b in aged]
        if not f or not a:
            continue
        f50, f95, a50, a95 = pct(f, 0.5), pct(f, 0.95), pct(a, 0.5), pct(a, 0.95)
        r50 = a50 / f50 if f50 > 0.0005 else float("nan")
        r95 = a95 / f95 if f95 > 0.0005 else float("nan")
        lines.append(
            f"| {step} | {f50:.3f} | {f95:.3f} | {a50:.3f} | {a95:.3f} | {r50:.2f} | {r95:.2f} |"
        )
    return lines


# -- table sizes ----------------------------------------------------------------------------------
def table_sizes(cfg: config_mod.Config) -> dict[str, dict[str, Any]]:
    """Per table: data files in the current snapshot (all, and most in one partition), log
    entries, the newest checkpoint's bytes, and files on disk."""
    import pyarrow as pa  # type: ignore[import-untyped]
    from deltalake import DeltaTable

    out: dict[str, dict[str, Any]] = {}
    for name in tables.TABLES:
        path = Path(cfg.table_path(name))
        adds = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True))
        keys = [c for c in adds.column_names if c.startswith("partition.")]
        per: dict[str, int] = defaultdict(int)
        for add in adds.select(keys).to_pylist() if keys else [{}] * adds.num_rows:
            per["/".join(str(v) for v in add.values())] += 1
        log_dir = path / "_delta_log"
        checkpoints = sorted(log_dir.glob("*.checkpoint*.parquet"))
        on_disk = sum(
            1
            for folder, _, files in os.walk(path)
            if "_delta_log" not in folder
            for f in files
            if f.endswith(".parquet")
        )
        out[name] = {
            "files": adds.num_rows,
            "most_in_a_partition": max(per.values(), default=0),
            "partitions": len(per),
            "log_entries": upkeep.log_entries(path),
            "checkpoint_bytes": checkpoints[-1].stat().st_size if checkpoints else 0,
            "parquet_on_disk": on_disk,
        }
    return out


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def size_lines(sizes: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| table | files | most in a partition | partitions | log entries "
        "| newest checkpoint | parquet on disk |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in sizes.items():
        lines.append(
            f"| {name} | {s['files']} | {s['most_in_a_partition']} | {s['partitions']} | "
            f"{s['log_entries']} | {s['checkpoint_bytes'] / 1000:.1f} kB | {s['parquet_on_disk']} |"
        )
    return lines


# -- ageing with the job's own writers ------------------------------------------------------------
def _template(cfg: config_mod.Config, name: str, rows: int) -> Any:
    from deltalake import DeltaTable

    data = DeltaTable(cfg.table_path(name)).to_pyarrow_table()
    return data.slice(0, rows)


def _renamed(data: Any, column: str, prefix: str) -> Any:
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    if column not in data.column_names or data.num_rows == 0:
        return data
    i = data.column_names.index(column)
    return data.set_column(i, column, pc.binary_join_element_wise(prefix, data[column], ""))


def _set(data: Any, column: str, value: Any, kind: Any) -> Any:
    import pyarrow as pa

    i = data.column_names.index(column)
    return data.set_column(i, column, pa.array([value] * data.num_rows, kind))


def _simulate_clock(path: Path, version: int, seconds_per_commit: float) -> None:
    """Log entries' modification times as if commit v had been made
    ``(version - v) * seconds_per_commit`` ago."""
    now = time.time()
    log_dir = path / "_delta_log"
    for entry in log_dir.iterdir():
        head = entry.name.split(".", 1)[0]
        if not head.isdigit():
            continue
        stamp = now - (version - int(head)) * seconds_per_commit
        os.utime(entry, (stamp, stamp))


def age(
    fresh: config_mod.Config, aged: config_mod.Config, versions: int, seconds: float
) -> dict[str, Any]:
    """``versions`` commits per table written to ``aged`` with the job's driver writers, upkeep
    taking its turns as in the job; append times per 500 versions."""
    import pyarrow as pa

    every = aged.upkeep.every_n_batches
    today = dt.datetime.now(tz=dt.UTC).date()
    templates = {
        name: _template(fresh, name, 20)
        for name in (
            "group_snapshots",
            "member_assignments",
            "partition_ownership",
            "findings",
            "group_offsets",
            "group_state",
        )
    }

    def path_of(name: str) -> Path:
        return Path(aged.table_path(name))

    times: dict[str, list[float]] = defaultdict(list)
    upkeep_seconds: list[float] = []
    started = time.monotonic()
    for v in range(versions):
        batch = v
        tag = f"aged{v % 50}-"
        day = today - dt.timedelta(days=AGE_DAYS - (v * AGE_DAYS) // max(1, versions))
        writes: dict[str, Callable[[], object]] = {}
        for name in ("group_snapshots", "member_assignments"):
            data = _set(_renamed(templates[name], "group", tag), "snapshot_date", day, pa.date32())
            writes[name] = functools.partial(
                deltawrite.append_once, path_of(name), tables.TABLES[name], data, AGE_APP, batch
            )
        own = _set(
            _renamed(templates["partition_ownership"], "group", tag),
            "from_generation",
            v // 50,
            pa.int32(),
        )
        writes["partition_ownership"] = functools.partial(
            deltawrite.merge_once,
            path_of("partition_ownership"),
            tables.PARTITION_OWNERSHIP,
            own,
            AGE_APP,
            batch,
        )
        found = _renamed(templates["findings"], "finding_id", f"v{v}-")
        writes["findings"] = functools.partial(
            deltawrite.merge_once,
            path_of("findings"),
            tables.FINDINGS,
            found,
            AGE_APP,
            batch,
            update=False,
        )
        offs = _renamed(templates["group_offsets"], "group", tag)
        writes["group_offsets"] = functools.partial(
            deltawrite.merge_once,
            path_of("group_offsets"),
            tables.GROUP_OFFSETS,
            offs,
            AGE_APP,
            batch,
            on=("group", "topic"),
            null_safe=False,
        )
        # Below every live batch id: a live batch reads these as older state, of other groups.
        state = _set(
            _renamed(templates["group_state"].slice(0, 5), "group", f"aged{v % 20}-"),
            "batch_id",
            v - versions - 1,
            pa.int64(),
        )
        writes["group_state"] = functools.partial(
            deltawrite.append_once,
            path_of("group_state"),
            tables.GROUP_STATE,
            state,
            AGE_APP,
            batch,
        )
        for name, write in writes.items():
            if templates[name].num_rows == 0:
                continue
            t = time.perf_counter()
            write()
            times[name].append(time.perf_counter() - t)
        if v % 20 == 19:
            # State maintenance keeps each aged group's newest versions only.
            from deltalake import DeltaTable

            DeltaTable(aged.table_path("group_state")).delete(f"batch_id < {v - versions - 1 - 20}")
        if every > 0:
            for table in _due(aged, v):
                path = Path(aged.table_path(table.name))
                _simulate_clock(path, DeltaTable_version(path), seconds)
                t = time.perf_counter()
                upkeep.tidy(path, table, aged.upkeep, None)
                upkeep_seconds.append(time.perf_counter() - t)
        if v % 500 == 499:
            log(
                f"  aged {v + 1} versions in {time.monotonic() - started:.0f}s; append p50 "
                f"{statistics.median(times['group_snapshots'][-100:]) * 1000:.1f} ms"
            )
    return {
        "write_p50_ms_by_500": {
            name: [
                round(statistics.median(ts[i : i + 500]) * 1000, 1) for i in range(0, len(ts), 500)
            ]
            for name, ts in times.items()
        },
        "upkeep_turn_p50_ms": round(statistics.median(upkeep_seconds) * 1000, 1)
        if upkeep_seconds
        else 0.0,
        "upkeep_turn_p95_ms": round(pct(upkeep_seconds, 0.95) * 1000, 1) if upkeep_seconds else 0.0,
        "seconds": round(time.monotonic() - started, 1),
    }


def DeltaTable_version(path: Path) -> int:  # noqa: N802 - reads as what it returns
    from deltalake import DeltaTable

    return int(DeltaTable(str(path)).version())


def _due(cfg: config_mod.Config, batch_id: int) -> tuple[tables.Table, ...]:
    from groupwatch.spark import upkeep as job_upkeep

    return job_upkeep.due(cfg, batch_id)


# -- the curve ----------------------------------------------------------------------------
def curve(work: Path, versions: int, settings: Any) -> dict[str, list[float]]:
    """Ten-row appends to one partition: median ms per 500 versions, without and with upkeep
    (every 20 appends, the log's clock at 5 s per commit)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from groupwatch.delta.read import schema

    out: dict[str, list[float]] = {}
    table = tables.GROUP_SNAPSHOTS
    rows = pa.Table.from_pylist(
        [
            {
                **dict.fromkeys(table.column_names),
                "group": f"g{i}",
                "generation": 1,
                "source_offset": i,
                "snapshot_date": dt.date(2026, 11, 24),
            }
            for i in range(10)
        ]
    )
    for mode in ("without upkeep", "with upkeep"):
        path = work / "curve" / mode.replace(" ", "-")
        write_deltalake(
            str(path),
            schema(table.name).empty_table(),
            partition_by=list(table.partition_by),
            configuration=upkeep.properties(settings),
        )
        times: list[float] = []
        for v in range(versions):
            t = time.perf_counter()
            deltawrite.append_once(path, table, rows, AGE_APP, v)
            times.append(time.perf_counter() - t)
            if mode == "with upkeep" and v % 20 == 19:
                _simulate_clock(path, v + 1, 5.0)
                upkeep.tidy(path, table, settings, None)
        out[mode] = [
            round(statistics.median(times[i : i + 500]) * 1000, 1)
            for i in range(0, len(times), 500)
        ]
        log(
            f"curve {mode}: {out[mode]} ms per 500 versions; log entries {upkeep.log_entries(path)}"
        )
    return out


def compare(work: Path, versions: int) -> dict[str, dict[str, float]]:
    """One ``snapshot_date`` partition aged by ``versions`` ten-row appends four ways at once
    (no upkeep; the shipped upkeep; removed files not kept; and the log cut back after an hour
    of 5 s commits), then 40 more appends to each in turn, so that the machine's load is the
    same for all four: median append ms, log entries, newest checkpoint bytes, active files."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from groupwatch.config import UpkeepConfig
    from groupwatch.delta.read import schema

    table = tables.GROUP_SNAPSHOTS
    rows = pa.Table.from_pylist(
        [
            {
                **dict.fromkeys(table.column_names),
                "group": f"g{i}",
                "generation": 1,
                "source_offset": i,
                "snapshot_date": dt.date(2026, 11, 24),
            }
            for i in range(10)
        ]
    )
    variants: dict[str, UpkeepConfig | None] = {
        "no upkeep": None,
        "shipped upkeep": UpkeepConfig(),
        "deleted files kept 0 h": UpkeepConfig(deleted_file_retention_hours=0),
        "and log kept 1 h": UpkeepConfig(deleted_file_retention_hours=0, log_retention_hours=1),
    }
    paths = {}
    for name, settings in variants.items():
        path = work / "compare" / name.replace(" ", "-")
        paths[name] = path
        write_deltalake(
            str(path),
            schema(table.name).empty_table(),
            partition_by=list(table.partition_by),
            configuration=upkeep.properties(settings or UpkeepConfig()),
        )
    for v in range(versions):
        for name, settings in variants.items():
            deltawrite.append_once(paths[name], table, rows, AGE_APP, v)
            if (
                settings is not None
                and v % settings.every_n_batches == settings.every_n_batches - 1
            ):
                _simulate_clock(paths[name], v + 1, 5.0)
                upkeep.tidy(paths[name], table, settings, None)
    times: dict[str, list[float]] = defaultdict(list)
    for v in range(versions, versions + 40):
        for name in variants:
            t = time.perf_counter()
            deltawrite.append_once(paths[name], table, rows, AGE_APP, v)
            times[name].append(time.perf_counter() - t)
    out = {}
    for name in variants:
        checkpoints = sorted((paths[name] / "_delta_log").glob("*.checkpoint.parquet"))
        out[name] = {
            "append_p50_ms": round(statistics.median(times[name]) * 1000, 1),
            "log_entries": upkeep.log_entries(paths[name]),
            "checkpoint_bytes": checkpoints[-1].stat().st_size if checkpoints else 0,
            "files": len(DeltaTable(str(paths[name])).file_uris()),
        }
        log(f"compare at {versions} versions, {name}: {out[name]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=60, help="live batches, fresh and aged")
    ap.add_argument("--rate", type=int, default=200, help="records per second produced")
    ap.add_argument("--age-versions", type=int, default=3000)
    ap.add_argument("--age-seconds-per-batch", type=float, default=5.0)
    ap.add_argument("--curve-versions", type=int, default=3000, help="0 = no curve")
    ap.add_argument("--compare-versions", type=int, default=0, help="0 = no comparison")
    ap.add_argument("--target-batches", type=int, default=0, help="0 = no target run")
    ap.add_argument(
        "--judge-compare",
        type=int,
        default=0,
        help="live batches with lag judged in a driver thread, then in a process of its own",
    )
    ap.add_argument(
        "--probe-every",
        type=float,
        default=8.0,
        help="seconds between record -> finding probes in the live runs (0 = none)",
    )
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    log(f"bench_ageing; {os.cpu_count()} cores, load {bench_job.load_text()}")
    log(f"groupwatch {bench_job.source_version()}")
    work = Path(tempfile.mkdtemp(prefix="groupwatch-ageing-"))
    report: dict[str, Any] = {"args": vars(args)}
    broker = None
    producer = None
    try:
        defaults = config_mod.load(ROOT / "conf" / "local.toml", env={})
        if args.curve_versions:
            report["curve_ms_per_500"] = curve(work, args.curve_versions, defaults.upkeep)
        if args.compare_versions:
            report["compare"] = compare(work, args.compare_versions)
        if not (args.batches or args.target_batches or args.judge_compare):
            return 0
        from groupwatch_dev.broker import LocalBroker

        broker = LocalBroker("ageing")
        bootstrap = broker.start(fresh=True).bootstrap
        create_mirror(bootstrap, TOPIC)
        producer = Producer(bootstrap, args.rate)
        producer.thread.start()
        from groupwatch.spark.session import build_session

        spark = build_session(live_config(bootstrap, work / "session"))
        if args.batches:
            fresh_cfg = live_config(bootstrap, work / "fresh")
            fresh = run_live(spark, fresh_cfg, args.batches, "fresh", args.probe_every)
            aged_cfg = live_config(bootstrap, work / "aged")
            from groupwatch.spark import sinks

            sinks.ensure_tables(spark, aged_cfg)
            log(f"ageing {args.age_versions} versions per table")
            report["ageing"] = age(
                fresh_cfg, aged_cfg, args.age_versions, args.age_seconds_per_batch
            )
            report["aged_sizes_before_live"] = table_sizes(aged_cfg)
            aged = run_live(spark, aged_cfg, args.batches, "aged", args.probe_every)
            report["steps"] = step_table(fresh.per_batch, aged.per_batch)
            if args.probe_every > 0:
                report["latency"] = latency_line({"fresh": fresh.prober, "aged": aged.prober})
            report["fresh_sizes"] = table_sizes(fresh_cfg)
            report["aged_sizes"] = table_sizes(aged_cfg)
            report["checkpoint_bytes"] = {
                "fresh": folder_bytes(Path(fresh_cfg.checkpoint.root)),
                "aged": folder_bytes(Path(aged_cfg.checkpoint.root)),
            }
        if args.judge_compare:
            runs = {}
            for mode in ("thread", "process"):
                cfg = live_config(
                    bootstrap, work / mode, f"lag.judge_process={str(mode == 'process').lower()}"
                )
                runs[mode] = run_live(spark, cfg, args.judge_compare, mode)
            report["judge_compare"] = step_table(
                runs["thread"].per_batch, runs["process"].per_batch, ("thread", "process")
            )
            for mode, job in runs.items():
                polls = job.polls[1:]  # the first reads end_offsets back and fills the keeper
                seconds = [p[0] for p in polls]
                report[f"{mode}_polls"] = {
                    "polls": len(job.polls),
                    "judge_due_p50_s": round(pct(seconds, 0.5), 2) if seconds else None,
                    "judge_due_max_s": round(max(seconds), 2) if seconds else None,
                    "driver_python_rss_mb_last": round(job.polls[-1][1]) if job.polls else None,
                    "child_rss_mb": round(getattr(job, "child_rss_mb", 0.0)),
                }
        if args.target_batches:
            target_cfg = live_config(bootstrap, work / "target")
            job = run_live(spark, target_cfg, args.target_batches, "target")
            sizes = table_sizes(target_cfg)
            report["target_sizes"] = sizes
            batch = [b["batch"] for b in job.per_batch[5:]]
            most_files = max(s["most_in_a_partition"] for s in sizes.values())
            most_log = max(s["log_entries"] for s in sizes.values())
            report["target"] = {
                "batches": len(job.per_batch),
                "batch_p50": round(pct(batch, 0.5), 3),
                "batch_p95": round(pct(batch, 0.95), 3),
                "most_files_in_a_partition": most_files,
                "most_log_entries": most_log,
                "met": most_files <= 200 and most_log <= 20_000,
            }
    finally:
        if producer is not None:
            producer.stop.set()
            producer.thread.join(30)
        if broker is not None:
            broker.stop()
            shutil.rmtree(broker.dir, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    for key in ("steps", "latency"):
        if key in report:
            print("\n".join(report.pop(key)))
            print()
    for key in ("fresh_sizes", "aged_sizes_before_live", "aged_sizes", "target_sizes"):
        if key in report:
            print(key)
            print("\n".join(size_lines(report.pop(key))))
            print()
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
