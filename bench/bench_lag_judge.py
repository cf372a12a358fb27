"""Benchmark: one lag poll's Python side over the tables a start-up left (no brokers).

    .venv/bin/python bench/bench_lag_judge.py --delta-root DIR [--polls 4] [--lagging 0.1]
        [--silent 0] [--churn 0] [--baseline COMMIT] [--gc]

``DIR`` holds ``committed_offsets``, ``partition_ownership`` and ``member_assignments`` (e.g.
the tables ``bench/bench_cluster.py --bench startup --keep`` left: 1.2 M committed partitions
of the 10,000-group cluster model).  The brokers' answers are made up, one per poll: every
partition's log end at its highest committed offset plus, for a ``--lagging`` share of the
partitions, records that grow each poll (so most partitions are idle and some lag, as on a
real cluster); the last ``--silent`` polls have no answer (the brokers did not answer: the
last answers judged again, the rows marked stale).  Times each part of
:meth:`groupwatch.spark.lag_poller.LagPoller.poll` that runs in Python, per poll: reading the
commits and the owners, the owners joined to the commits (before the answer, where the code
has ``FleetKeeper.prepare``), the judgement, the rows for Delta.  The cyclic garbage collector is
off during the polls, as the job's poller has it (``--gc`` keeps it on).  ``--baseline
COMMIT``: the same polls by that commit's code (``git archive`` into a temporary folder, run
in a subprocess), then this tree's, one after the other.  ``--churn S``: at poll p after the
first, the owners of a share S x p of the groups have a generation they did not have at the
last poll, and the commits come in another order, as a live fleet's tables give them after a
batch's MERGE rewrote their files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("BENCH_LAG_SRC"):
    sys.path.insert(0, os.environ["BENCH_LAG_SRC"])
else:
    sys.path.insert(0, str(ROOT / "src"))


def _baseline(commit: str, argv: list[str]) -> None:
    """This benchmark on ``commit``'s ``src`` (the benchmark itself from this tree)."""
    work = Path(tempfile.mkdtemp(prefix="groupwatch-lag-bench-"))
    archive = subprocess.run(
        ["git", "archive", commit, "src", "conf"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    print(f"== baseline {commit} ==", flush=True)
    # Its configuration too: a newer tree's keys are unknown to older code.
    env = {**os.environ, "BENCH_LAG_SRC": str(work / "src"), "BENCH_LAG_CONF": str(work / "conf")}
    subprocess.run([sys.executable, __file__, *argv], env=env, check=True)
    print("== this tree ==", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--delta-root", required=True)
    ap.add_argument("--polls", type=int, default=4)
    ap.add_argument("--lagging", type=float, default=0.1)
    ap.add_argument("--poll-seconds", type=int, default=15)
    ap.add_argument("--silent", type=int, default=0, help="last polls without an answer")
    ap.add_argument("--gc", action="store_true", help="keep the cyclic GC on during the polls")
    ap.add_argument("--baseline", default=None, help="a commit to compare with")
    ap.add_argument(
        "--churn",
        type=float,
        default=0.0,
        help="share S: at poll p, S x p of the groups with new owners; the commits reordered",
    )
    args = ap.parse_args()
    if args.baseline:
        argv = [a for a in sys.argv[1:] if a not in ("--baseline", args.baseline)]
        _baseline(args.baseline, argv)

    from groupwatch import config as config_mod
    from groupwatch import tables
    from groupwatch.detect.lag.model import EndOffset
    from groupwatch.spark import lag_answer, lag_owners, lag_read, lag_rows

    conf = Path(os.environ.get("BENCH_LAG_CONF", ROOT / "conf"))
    cfg = config_mod.load(conf / "local.toml", env={}, overrides=[f"delta.root={args.delta_root}"])
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench_lag_judge: {os.cpu_count()} cores, load {load}", flush=True)
    columns = True  # the keeper that judges as columns, as the job's
    from groupwatch.detect.lag.fleet import FleetKeeper

    keeper: Any = FleetKeeper(cfg.lag.rules())
    reader = lag_owners.OwnerReader(cfg)  # kept from poll to poll, as the job keeps it
    rng = random.Random(1)
    top: dict[tuple[str, int], int] = {}
    growing: set[tuple[str, int]] = set()
    now_ms = int(time.time() * 1000)
    figures = []
    if not args.gc:
        import gc

        gc.disable()
    for poll in range(args.polls):
        t: dict[str, float] = {}
        started = time.perf_counter()
        commits: Any = lag_read.read_commit_table(cfg) if columns else lag_read.read_commits(cfg)
        t["read commits"] = time.perf_counter() - started
        if columns:
            started = time.perf_counter()
            lag_answer.committed_partitions(commits)
            t["partitions to ask"] = time.perf_counter() - started
        if columns and args.churn and poll:
            commits = _churned_commits(commits, rng)
        if not top:
            if columns:
                pairs = zip(
                    commits.column("topic").to_pylist(),
                    commits.column("partition").to_pylist(),
                    commits.column("offset").to_pylist(),
                    strict=True,
                )
            else:
                pairs = ((c.topic, c.partition, c.offset) for c in commits)
            for topic, partition, offset in pairs:
                tp = (topic, partition)
                top[tp] = max(top.get(tp, 0), offset)
            growing = {tp for tp in top if rng.random() < args.lagging}
        at = now_ms + poll * args.poll_seconds * 1000
        stale = poll >= args.polls - args.silent
        ends = [
            EndOffset(tp[0], tp[1], 0, end + (100 * (poll + 1) if tp in growing else 0), at)
            for tp, end in top.items()
            if not stale
        ]
        started = time.perf_counter()
        owners = reader.read_table() if columns else reader.read()
        t["read owners"] = time.perf_counter() - started
        if columns and args.churn and poll:
            owners = _churned_owners(owners, args.churn, poll)
        prepares = columns and hasattr(keeper, "prepare")
        if prepares:  # the owners joined before the answer, as the job's poll does it
            started = time.perf_counter()
            keeper.prepare(commits, owners)
            t["join owners"] = time.perf_counter() - started
        started = time.perf_counter()
        keeper.observe(ends)
        keeper.forget_older(at - cfg.lag.history_hours * 3_600_000)
        t["observe"] = time.perf_counter() - started
        started = time.perf_counter()
        if prepares:
            result = keeper.judge_prepared(stale=stale, known_ms=at)
        elif columns:
            result = keeper.judge_table(commits, owners, stale=stale, known_ms=at)
        else:
            result = keeper.judge(commits, owners, stale=stale, known_ms=at)
        t["judge"] = time.perf_counter() - started
        started = time.perf_counter()
        if columns:
            lag_rows.timed(result.table)
        else:
            lag_rows.partition_lag_table(result.rows)
        lag_rows._arrow(tables.LAG_HISTORY, lag_rows.topic_rows(result.topics))
        t["rows for Delta"] = time.perf_counter() - started
        total = sum(t.values())
        statuses: dict[str, int] = {}
        every = result.table.column("status").to_pylist() if columns else None
        for status in every if every is not None else (r.status for r in result.rows):
            statuses[status] = statuses.get(status, 0) + 1
        judged = len(statuses) and sum(statuses.values())
        one_by_one = f", {keeper.judged_one_by_one:,} one by one" if columns else ""
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        parts = ", ".join(f"{k} {v:.2f}" for k, v in t.items())
        print(
            f"poll {poll}{' (no answer)' if stale else ''}: {judged:,} partitions{one_by_one}, "
            f"{total:.2f}s ({parts}); "
            f"statuses {statuses}; peak RSS {rss:.0f} MB",
            flush=True,
        )
        figures.append({"poll": poll, "seconds": round(total, 3), "parts": t, "rss_mb": rss})
    print(json.dumps({"partitions": len(top), "polls": figures}))
    return 0


def _churned_commits(commits: Any, rng: random.Random) -> Any:
    """The commits in the order a live table gives them after a batch's MERGE rewrote its
    files: the same rows from another place on (a rotation: every row moves)."""
    import pyarrow as pa

    cut = rng.randrange(1, max(2, commits.num_rows))
    return pa.concat_tables([commits.slice(cut), commits.slice(0, cut)])


def _churned_owners(owners: Any, share: float, poll: int) -> Any:
    """The first ``share`` x ``poll`` of the groups with their owners' generation moved on by
    ``poll``: each of them has a generation it did not have at the last poll (and the owners'
    marks change with it), more groups poll after poll."""
    import pyarrow as pa
    import pyarrow.compute as pc

    groups = pc.unique(owners.column("group"))
    moved = groups.slice(0, int(len(groups) * share) * poll)
    bump = pc.if_else(pc.is_in(owners.column("group"), moved), poll, 0)
    generation = pc.add(owners.column("generation"), pc.cast(bump, pa.int64()))
    index = owners.column_names.index("generation")
    return owners.set_column(index, "generation", generation)


if __name__ == "__main__":
    raise SystemExit(main())
