"""Benchmark: the dashboard's pages and the analysts' SQL on a fleet's tables as the job leaves
them on its first day and after a month, in one run.

    .venv/bin/python bench/bench_month.py [--groups 2000] [--big 500] [--days 30]
        [--rebalances-per-day 4] [--lag-polls-per-hour 240] [--no-sql] [--repeat 2]
        [--baseline COMMIT] [--no-cluster] [--keep]

Two Delta roots hold the same fleet now (``tests/dashboard/fleet_scenario.py``: ``--groups``
classic groups of 1-6 members, a few critical, KIP-848 groups, one group of ``--big``
members, every partition's lag), with the tables partitioned as the job's are:

* **fresh**: the fleet as it stands, with a day's history: the day's ``--rebalances-per-day``
  earlier generations of each classic group (snapshots, members, closed ownership intervals)
  and a day of ``lag_history``;
* **month**: the same, after ``--days`` days of it: those generations every day, with their
  findings (one group in a hundred raises a warning a day), the closed ownership intervals of
  ``upkeep.ownership_retention_days``, and ``lag_history`` of ``lag.history_hours`` at
  ``--lag-polls-per-hour`` polls per hour (240: the default ``lag.poll_seconds`` of 15),
  each day one file per table, as compaction leaves a past day.

Both roots use the shipped retentions, so the month is what a month leaves behind, and each
past day of the history tables is then clustered by group as upkeep's turns leave it
(``groupwatch.upkeep.cluster_day``, the shipped row groups; ``--no-cluster``: left as written,
as before upkeep clustered).  Then, on
each root, in a process of its own: each page rendered the first time (the tables read), again
(same versions), and after the job's next batch (a new version of the snapshots, members and
lag tables: what an open dashboard pays at every refresh), and the process's peak memory; and
each query of ``dashboards/sql/`` run by Spark (local, two cores), twice, the second timed.
With ``--baseline COMMIT`` the pages are timed by that commit's code too (``git archive``),
on the same tables, after this code's.  Prints one line per figure, the month/fresh ratios,
then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402
from tests.dashboard import fleet_scenario  # noqa: E402
from tests.dashboard.scenario import tps  # noqa: E402

from groupwatch import upkeep  # noqa: E402
from groupwatch.config import UpkeepConfig  # noqa: E402
from groupwatch.delta.read import schema  # noqa: E402
from groupwatch.tables import TABLES, group_bucket  # noqa: E402

#: (name, URL path and query).
PAGES = [
    ("fleet", "/"),
    ("fleet by lag", "/?sort=lag"),
    ("group (largest)", "/group?group={big}"),
    ("group (small)", "/group?group={small}"),
    # Another group's first view, after the pages above: what a user opening a second group pays.
    ("group (another small)", "/group?group={other}"),
    ("partition history (largest)", "/partitions?group={big}"),
    ("data health", "/health"),
]
#: The shipped retentions (conf/local.toml) the month is cut to.
OWNERSHIP_DAYS = 30
LAG_HISTORY_HOURS = 168
#: Findings: one group in this many raises a warning a day.
FINDING_EVERY = 100


def log(text: str) -> None:
    print(text, flush=True)


def write(root: Path, table: str, rows: list[dict[str, Any]], mode: str = "append") -> None:
    """``rows`` into ``table`` in its declared schema and partitioning (the job's)."""
    if not rows and mode == "append":
        return
    sch = schema(table)
    if table == "lag_history":  # the job's poll fills the partition column
        rows = [{**r, "group_bucket": group_bucket(r["group"])} for r in rows]
    cols = {f.name: [r.get(f.name) for r in rows] for f in sch}
    parts = list(TABLES[table].partition_by) or None
    write_deltalake(str(root / table), pa.table(cols, schema=sch), mode=mode, partition_by=parts)  # type: ignore[arg-type]


def _partitioned_overwrite(root: Path, table: str, rows: list[dict[str, Any]], **_: Any) -> None:
    write(root, table, rows, mode="overwrite")


def fleet(root: Path, groups: int, big: int, generation: int) -> dict[str, Any]:
    """The fleet now, its tables partitioned as the job's."""
    fleet_scenario.write = _partitioned_overwrite  # type: ignore[assignment]
    return fleet_scenario.build(root, groups=groups, big=big, generation=generation)


def _classic_groups(root: Path) -> list[tuple[str, int, str]]:
    """(group, members, topic) of every classic group now."""
    from deltalake import DeltaTable

    snaps = DeltaTable(str(root / "group_snapshots")).to_pyarrow_table(
        columns=["group", "member_count", "group_type"]
    )
    out = []
    for g, n, kind in zip(*(snaps.column(c).to_pylist() for c in snaps.column_names), strict=True):
        if kind is None and n:
            out.append((g, int(n), f"t-{g}"))
    return sorted(out)


def history(
    root: Path,
    groups: list[tuple[str, int, str]],
    days: int,
    per_day: int,
    polls_per_hour: int,
    now: datetime,
) -> dict[str, int]:
    """``days`` days of history before ``now``, a day per append (one file per table and day,
    as compaction leaves a past day); generations 3 up to the fleet's current one."""
    counts = {"group_snapshots": 0, "member_assignments": 0, "partition_ownership": 0}
    counts |= {"findings": 0, "lag_history": 0}
    offset = 10**9
    gen_of = dict.fromkeys((g for g, _, _ in groups), 3)
    lag_days = min(days, LAG_HISTORY_HOURS // 24)
    for back in range(days, 0, -1):
        day_start = (now - timedelta(days=back)).replace(hour=0, minute=0, second=0)
        snaps: list[dict[str, Any]] = []
        members: list[dict[str, Any]] = []
        owned: list[dict[str, Any]] = []
        findings: list[dict[str, Any]] = []
        for i, (g, size, topic) in enumerate(groups):
            for k in range(per_day):
                at = day_start + timedelta(seconds=(i * 37 + k * 86400 // per_day) % 86400)
                gen = gen_of[g]
                gen_of[g] = gen + 1
                offset += 1
                where = {
                    "source_topic": "__consumer_offsets",
                    "source_partition": offset % 50,
                    "source_offset": offset,
                    "source_timestamp": at,
                    "snapshot_date": at.date(),
                }
                snaps.append(
                    {"group": g, "generation": gen, "protocol_type": "consumer",
                     "protocol": "range", "leader": f"{g}-m0", "current_state_timestamp": at,
                     "member_count": size, "record_version": 3, "tombstone": False, **where}
                )  # fmt: skip
                for m in range(size):
                    members.append(
                        {"group": g, "generation": gen, "member_id": f"{g}-m{m}",
                         "client_id": f"client-{m}", "topics": [topic],
                         "claim": tps((topic, m)), "claim_generation": gen - 1,
                         "assignment": tps((topic, m)), **where}
                    )  # fmt: skip
                    if back <= OWNERSHIP_DAYS:
                        end = at + timedelta(seconds=86400 // per_day)
                        owned.append(
                            {"group": g, "topic": topic, "partition": m,
                             "member_id": f"{g}-m{m}", "client_id": f"client-{m}",
                             "from_generation": gen, "from_time": at, "to_generation": gen + 1,
                             "to_time": end, "to_date": end.date()}
                        )  # fmt: skip
            if (i + back) % FINDING_EVERY == 0:
                gen = gen_of[g] - 1
                findings.append(
                    {"finding_id": f"h-{g}-{back}", "kind": "rebalance_storm",
                     "severity": "warning", "group": g, "generation": gen, "topic": topic,
                     "members": [f"{g}-m0"], "detail": f"{g} rebalanced often",
                     "evidence": "{}", "source": {"topic": "__consumer_offsets",
                     "partition": 0, "offset": offset, "timestamp": 0},
                     "detected_at": day_start + timedelta(hours=12)}
                )  # fmt: skip
        write(root, "group_snapshots", snaps)
        write(root, "member_assignments", members)
        write(root, "partition_ownership", owned)
        write(root, "findings", findings)
        for name, rows in (
            ("group_snapshots", snaps),
            ("member_assignments", members),
            ("partition_ownership", owned),
            ("findings", findings),
        ):
            counts[name] += len(rows)
        if back <= lag_days:
            counts["lag_history"] += lag_day(root, groups, day_start, polls_per_hour)
        log(f"  day -{back}: {sum(counts.values()):,} rows so far")
    return counts


def cluster(root: Path, today: Any) -> dict[str, int]:
    """Every past day of the clustered tables sorted by group, as upkeep's turns leave them
    (one day a turn); the days done per table."""
    settings = UpkeepConfig()
    done: dict[str, int] = {}
    for table, column in upkeep.CLUSTERED_TABLES.items():
        path = root / table
        done[table] = 0
        while True:
            target = DeltaTable(str(path))
            days = upkeep.unclustered_days(
                path, target, column, today, settings.cluster_row_group_rows
            )
            if not days:
                break
            upkeep.cluster_day(target, column, days[0], settings)
            done[table] += 1
    return done


def lag_day(
    root: Path, groups: list[tuple[str, int, str]], day_start: datetime, polls_per_hour: int
) -> int:
    """A day of ``lag_history`` (a row per group and topic per poll), built as columns."""
    polls = 24 * polls_per_hour
    n = len(groups)
    start_us = int(day_start.timestamp() * 1_000_000)
    step_us = 3_600_000_000 // polls_per_hour
    at = np.repeat(start_us + step_us * np.arange(polls, dtype=np.int64), n)
    sch = schema("lag_history")
    pick = np.tile(np.arange(n), polls)
    cols = {
        "group": pa.array([g for g, _, _ in groups], pa.string()).take(pick),
        "topic": pa.array([t for _, _, t in groups], pa.string()).take(pick),
        "observed_at": pa.array(at, pa.int64()).cast(sch.field("observed_at").type),
        "partitions": pa.array(np.array([s for _, s, _ in groups], np.int32)[pick]),
        "lag_records": pa.array((pick * 7 % 50).astype(np.int64)),
        "lag_seconds": pa.array((pick % 30).astype(np.float64)),
        "status": pa.array(np.full(n * polls, "ok", dtype=object), pa.string()),
        "group_bucket": pa.array(np.array([group_bucket(g) for g, _, _ in groups], np.int32)[pick]),
    }
    table = pa.table({f.name: cols[f.name] for f in sch}, schema=sch)
    write_deltalake(str(root / "lag_history"), table, mode="append", partition_by=["group_bucket"])
    return table.num_rows


def a_batch(root: Path, group: str, topic: str, size: int, gen: int, now: datetime) -> None:
    """What the job's next batch adds: one group's new generation, a lag poll."""
    at = now + timedelta(seconds=1)
    where = {
        "source_topic": "__consumer_offsets",
        "source_partition": 7,
        "source_offset": 10**12,
        "source_timestamp": at,
        "snapshot_date": at.date(),
    }
    write(root, "group_snapshots", [
        {"group": group, "generation": gen, "protocol_type": "consumer", "protocol": "range",
         "leader": f"{group}-m0", "member_count": size, "record_version": 3, "tombstone": False,
         **where}
    ])  # fmt: skip
    write(root, "member_assignments", [
        {"group": group, "generation": gen, "member_id": f"{group}-m{m}", "topics": [topic],
         "assignment": tps((topic, m)), **where}
        for m in range(size)
    ])  # fmt: skip
    write(root, "lag_history", [
        {"group": group, "topic": topic, "observed_at": at, "partitions": size, "lag_records": 0,
         "lag_seconds": 0.0, "status": "idle"}
    ])  # fmt: skip


_SERVER = r"""
import json, sys, time
from pathlib import Path
from groupwatch.delta.read import DeltaStore
from groupwatch.dashboard.pages import Pages
from groupwatch.dashboard.filters import parse
root, repeat, urls = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
pages = Pages(DeltaStore(root))
def timed(url):
    path, _, query = url.partition("?")
    started = time.perf_counter()
    pages.render(path, parse("?" + query))
    return time.perf_counter() - started
out = {name: {"first": timed(url)} for name, url in urls}
for name, url in urls:
    out[name]["again"] = min(timed(url) for _ in range(repeat))
print("BATCH", flush=True)
sys.stdin.readline()
for name, url in urls:
    out[name]["next_batch"] = timed(url)
status = Path("/proc/self/status").read_text()
hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
print(json.dumps({"pages": out, "memory_hwm_mb": round(int(hwm.split()[1]) / 1024, 1)}))
"""


def page_times(
    root: Path, urls: list[tuple[str, str]], repeat: int, batch: Any, src: Path = ROOT / "src"
) -> Any:
    """The pages (by the code in ``src``) in a process of their own; ``batch()`` between the
    warm renders and the renders after the job's next batch."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(root), str(repeat), json.dumps(urls)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "BATCH":
        proc.wait()
        raise RuntimeError(f"the page process failed: {line!r}")
    batch()
    proc.stdin.write("\n")
    proc.stdin.flush()
    out = proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError("the page process failed")
    return json.loads(out.strip().splitlines()[-1])


def sql_times(roots: dict[str, Path], params: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each query of dashboards/sql on each root, run twice, the second timed."""
    from groupwatch import config
    from groupwatch.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="gw-month-spark-"))
    cfg = config.load(
        None,
        env={},
        overrides=[
            "spark.master=local[2]",
            "spark.shuffle_partitions=2",
            f'spark.conf={{"spark.sql.warehouse.dir": "{work / "warehouse"}"}}',
        ],
    )
    spark = build_session(cfg)
    spark.sparkContext.setLogLevel("ERROR")
    out: dict[str, dict[str, float]] = {}
    try:
        for path in sorted((ROOT / "dashboards" / "sql").glob("*.sql")):
            for label, root in roots.items():
                text = path.read_text().replace("${delta_root}", str(root))
                for key, value in params.items():
                    text = text.replace("${" + key + "}", value)
                seconds, rows = 0.0, 0
                for _ in range(2):
                    started = time.perf_counter()
                    rows = len(spark.sql(text).collect())
                    seconds = time.perf_counter() - started
                out.setdefault(path.name, {})[label] = seconds
                out[path.name][label + "_rows"] = rows
            f, m = out[path.name]["fresh"], out[path.name]["month"]
            log(f"  sql {path.name}: fresh {f:.2f}s, month {m:.2f}s ({m / f:.2f}x)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--big", type=int, default=500)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--rebalances-per-day", type=int, default=4)
    ap.add_argument("--lag-polls-per-hour", type=int, default=240)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-sql", action="store_true")
    ap.add_argument("--baseline", default=None, help="a commit whose pages to time too")
    ap.add_argument("--no-cluster", action="store_true", help="leave the past days unsorted")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    log(f"bench_month; groupwatch commit {commit}; {os.cpu_count()} cores; {vars(args)}")
    work = Path(tempfile.mkdtemp(prefix="gw-month-"))
    per_day = args.rebalances_per_day
    current = 3 + args.days * per_day
    now = datetime.now(UTC).replace(microsecond=0)
    roots = {"fresh": work / "fresh", "month": work / "month"}
    rows: dict[str, dict[str, int]] = {}
    try:
        for label, days in (("fresh", 1), ("month", args.days)):
            started = time.perf_counter()
            fleet(roots[label], args.groups, args.big, current)
            for table in TABLES:  # the tables the scenario leaves out exist, empty
                if not (roots[label] / table).exists():
                    write(roots[label], table, [], mode="overwrite")
            groups = _classic_groups(roots[label])
            rows[label] = history(roots[label], groups, days, per_day, args.lag_polls_per_hour, now)
            log(f"{label}: {rows[label]} in {time.perf_counter() - started:.0f}s")
            if not args.no_cluster:
                started = time.perf_counter()
                done = cluster(roots[label], now.date())
                log(f"{label}: past days clustered {done} in {time.perf_counter() - started:.1f}s")
        small, other = [g for g, n, _ in groups if n == 3][:2]
        urls = [
            (name, url.format(big=fleet_scenario.BIG, small=small, other=other))
            for name, url in PAGES
        ]
        out: dict[str, Any] = {"args": vars(args), "commit": commit, "rows": rows}
        codes = {"": ROOT / "src"}
        if args.baseline:
            # The same pages by the baseline's code, on the same tables, after this code's.
            old = work / "baseline"
            old.mkdir()
            archive = subprocess.run(
                ["git", "archive", args.baseline, "src"], cwd=ROOT, capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
            codes[f"baseline {args.baseline} "] = old / "src"
        gen = current
        for code, src in codes.items():
            for label, root in roots.items():
                gen += 1
                out[code + label] = page_times(
                    root,
                    urls,
                    args.repeat,
                    lambda root=root, gen=gen: a_batch(root, small, f"t-{small}", 3, gen, now),
                    src,
                )
                for name, t in out[code + label]["pages"].items():
                    log(
                        f"  {code}{label} {name}: first {t['first']:.2f}s, again "
                        f"{t['again']:.3f}s, after a batch {t['next_batch']:.2f}s"
                    )
                log(f"  {code}{label} peak memory {out[code + label]['memory_hwm_mb']:,.0f} MB")
            log(f"{code}month / fresh:")
            for name, _ in urls:
                f, m = out[code + "fresh"]["pages"][name], out[code + "month"]["pages"][name]
                log(
                    "  "
                    + name
                    + ": "
                    + ", ".join(
                        f"{k} {m[k] / f[k]:.2f}x" for k in ("first", "again", "next_batch") if f[k]
                    )
                )
            ratio = out[code + "month"]["memory_hwm_mb"] / out[code + "fresh"]["memory_hwm_mb"]
            log(f"  peak memory {ratio:.2f}x")
        if not args.no_sql:
            at = (now - timedelta(days=2)).strftime("%Y-%m-%d %H:%M:%S")
            out["sql"] = sql_times(
                roots,
                {
                    "group": f"'{small}'",
                    "topic": f"'t-{small}'",
                    "partition": "0",
                    "at": f"TIMESTAMP'{at}'",
                    "since": "current_timestamp() - INTERVAL 1 DAY",
                },
            )
        print(json.dumps(out, default=str))
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
