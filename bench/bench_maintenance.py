"""Benchmark: state maintenance of local tables on the driver, at fleet size.

    .venv/bin/python bench/bench_maintenance.py [--groups 10000,100000] [--live-batches 20]
        [--batch-groups 300] [--samples 3]

Every ``job.state_maintenance_every_n_batches`` batches (20 by default) the job drops the
``group_state`` versions no batch will read again (``state_store.maintain``); on local tables
the driver does it with delta-rs (``_maintain_on_driver``): it reads every version's small
columns and every group's commit times, decides in Python, and deletes by MERGE.  That batch
stalls for as long as it takes, and the read grows with the fleet.

For each ``--groups`` size: a ``group_state`` as a start-up leaves it (one version of each group,
written by the job's own delta-rs writer in four appends) and ``--live-batches`` live batches of
``--batch-groups`` random groups each, a ``group_offsets`` of three topics a group; then the
maintenance of the batch after them, on a fresh copy of the tables each sample.  Prints the
median and slowest run per size, the versions dropped, and the ratio of each size's median to
the first size's (the baseline).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import tables  # noqa: E402
from groupwatch.delta import write as deltawrite  # noqa: E402
from groupwatch.spark import state_store  # noqa: E402

WHEN = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _state_rows(names: list[str], batch_id: int):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    n = len(names)
    return pa.table(
        {
            "group": pa.array(names, pa.string()),
            "batch_id": pa.array([batch_id] * n, pa.int64()),
            "state": pa.array(['{"members":[]}'] * n, pa.string()),
            "last_event_time": pa.array([WHEN] * n, pa.timestamp("us", "UTC")),
            "deleted": pa.array([False] * n),
            "pending_until": pa.nulls(n, pa.timestamp("us", "UTC")),
            "pending_partition": pa.nulls(n, pa.int32()),
        }
    )


def build(root: Path, groups: int, live: int, per_batch: int) -> int:
    """The two tables under ``root``; the batch that maintains them."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from groupwatch.delta import read as deltaread

    names = [f"group-{g:07d}" for g in range(groups)]
    state = root / "group_state"
    write_deltalake(
        str(state),
        deltaread.schema(tables.GROUP_STATE.name).empty_table(),
        partition_by=list(tables.GROUP_STATE.partition_by) or None,
    )
    for b in range(4):
        deltawrite.append_once(state, tables.GROUP_STATE, _state_rows(names[b::4], b), "bench", b)
    rng = random.Random(groups)
    for b in range(4, 4 + live):
        deltawrite.append_once(
            state,
            tables.GROUP_STATE,
            _state_rows(sorted(rng.sample(names, per_batch)), b),
            "bench",
            b,
        )
    keys = [(g, f"topic-{t}") for g in names for t in range(3)]
    write_deltalake(
        str(root / "group_offsets"),
        pa.table(
            {
                "group": pa.array([g for g, _ in keys], pa.string()),
                "topic": pa.array([t for _, t in keys], pa.string()),
                "max_partition": pa.array([7] * len(keys), pa.int32()),
                "last_commit_time": pa.array([WHEN] * len(keys), pa.timestamp("us", "UTC")),
            }
        ),
    )
    return 4 + live


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", default="10000,100000")
    ap.add_argument("--live-batches", type=int, default=20)
    ap.add_argument("--batch-groups", type=int, default=300)
    ap.add_argument("--samples", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.groups.split(",")]
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-maintenance-") as tmp:
        for groups in sizes:
            built = Path(tmp) / f"built-{groups}"
            started = time.monotonic()
            batch_id = build(built, groups, args.live_batches, args.batch_groups)
            print(f"{groups:,} groups: tables built in {time.monotonic() - started:.1f}s")
            cfg = config_mod.load(None, env={}, overrides=[f"delta.root={tmp}/unused"])
            clock_ms = int((WHEN + dt.timedelta(minutes=5)).timestamp() * 1000)
            times = []
            for _ in range(args.samples):
                copy = Path(tmp) / f"copy-{groups}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(built, copy)
                t = time.perf_counter()
                done = state_store._maintain_on_driver(
                    cfg, batch_id, clock_ms, copy / "group_state", copy / "group_offsets"
                )
                times.append(time.perf_counter() - t)
            medians[groups] = statistics.median(times)
            print(
                f"  maintenance: median {statistics.median(times):.2f}s, slowest "
                f"{max(times):.2f}s; {done.dropped:,} version(s) dropped, {done.kept:,} "
                "group(s) keep state"
            )
    base = sizes[0]
    print("== summary == (median; ratio to the first size)")
    for groups, median in medians.items():
        print(f"{groups:>9,} groups: {median:6.2f}s  x{median / medians[base]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
