"""Benchmark: the Python stage's worker function over a start-up of the cluster model, in
one process, without Spark's transport.

    .venv/bin/python bench/bench_model_worker.py [--groups 10000] [--repeat 2]
        [--baseline DIR ...] [--profile FILE]

What the workers of a start-up's batch do over ``bench/cluster_model.py``'s history (every
group's metadata and KIP-848 records, each group with the (topic, highest partition, last
commit) rows the JVM's commit tally hands it, no saved state, the batch quiescent): one call of
the job's worker function (``spark.python_stage.process_arrow``) per group, in one process,
timed as wall and CPU seconds. The group records are built once from the model (about a minute)
and kept under ``.groupwatch/bench/``.

``--baseline DIR``: the same calls by the code under ``DIR/src`` (e.g. a ``git worktree`` of an
earlier commit), in a subprocess, alternated with this tree's ``--repeat`` times, so that the
machine's load weighs on both alike; the output rows of every version are hashed, and the
hashes must agree (the start-up's rows are the same). ``--profile FILE``: cProfile of this
tree's pass into FILE, its 40 costliest calls printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("BENCH_MODEL_WORKER_SRC"):
    sys.path.insert(0, os.environ["BENCH_MODEL_WORKER_SRC"])
else:
    sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(1, str(ROOT / "bench"))

#: Group name -> its records (key, value, partition, offset, ts), and -> its commit rows
#: (topic, highest partition, last commit ms).
Inputs = tuple[dict[str, list[tuple[bytes, bytes | None, int, int, int]]], dict[str, list[Any]]]


def model_inputs(groups: int) -> Inputs:
    """The model's group records per group and the commit tally per group (cached)."""
    import cluster_model as cm

    params = cm.Params(groups=groups)
    cache = cm.MANIFEST_DIR / f"model-worker-{params.digest()}.pickle"
    if cache.exists():
        loaded: Inputs = pickle.loads(cache.read_bytes())
        return loaded
    from groupwatch.protocol import decode_key
    from groupwatch.protocol.models import GroupMetadataKey, OffsetCommitKey

    started = time.perf_counter()
    records: dict[str, list[tuple[bytes, bytes | None, int, int, int]]] = defaultdict(list)
    tally: dict[tuple[str, str], tuple[int, int]] = {}
    model = cm.ClusterModel(params)
    for offset, (key, value, partition, ts) in enumerate(cm.history(model, 1_790_000_000_000)):
        decoded = decode_key(key)[1]
        if isinstance(decoded, OffsetCommitKey):
            seen = tally.get((decoded.group, decoded.topic), (-1, 0))
            tally[(decoded.group, decoded.topic)] = (max(seen[0], decoded.partition), ts)
            continue
        group = (
            decoded.group
            if isinstance(decoded, GroupMetadataKey)
            else getattr(decoded, "group_id", None)
        )
        if group is not None:
            records[group].append((key, value, partition, offset, ts))
    commits: dict[str, list[Any]] = defaultdict(list)
    for (group, topic), (highest, ts) in sorted(tally.items()):
        commits[group].append((topic, highest, ts))
    inputs: Inputs = (dict(records), dict(commits))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(inputs))
    print(f"model inputs built in {time.perf_counter() - started:.0f}s: {cache}", flush=True)
    return inputs


def one_pass(inputs: Inputs, profile: str | None) -> dict[str, Any]:
    """Every group through the worker function once: seconds, CPU seconds, rows, rows' hash."""
    import pyarrow as pa
    from bench_worker import output_arrow_schema, record_table, state_schema

    from groupwatch import config as config_mod
    from groupwatch.spark.python_stage import process_arrow

    schema = output_arrow_schema()
    detector = config_mod.load(ROOT / "conf" / "local.toml", env={}).detect.detector()
    records, commits = inputs
    clocks: dict[int, int] = {}
    for recs in records.values():
        for _, _, partition, _, ts in recs:
            clocks[partition] = max(clocks.get(partition, 0), ts)
    calls = []
    for group in sorted(set(records) | set(commits)):
        rec = record_table(
            [(group, k, v, "mirror", p, o, ts) for k, v, p, o, ts in records.get(group, [])]
        )
        rows = commits.get(group, [])
        st = pa.Table.from_pydict(
            {
                "group": [group] * len(rows),
                "state": [None] * len(rows),
                "last_event_ms": [None] * len(rows),
                "topic": [r[0] for r in rows],
                "max_partition": [r[1] for r in rows],
                "last_commit_ms": [r[2] for r in rows],
            },
            schema=state_schema(),
        )
        calls.append((rec, st))
    detected_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    outputs = []
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    started, started_cpu = time.perf_counter(), time.process_time()
    for rec, st in calls:
        outputs.append(process_arrow(rec, st, detector, detected_at, schema, clocks, True))
    seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    if prof is not None:
        import pstats

        prof.disable()
        prof.dump_stats(profile)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    digest = hashlib.sha256()
    rows = 0
    for out in outputs:
        by_table = table_rows_of(out)
        rows += sum(len(v) for v in by_table.values())
        digest.update(repr(sorted(by_table.items())).encode())
    return {
        "groups": len(calls),
        "rows": rows,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "rows_sha256": digest.hexdigest()[:16],
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def table_rows_of(out: Any) -> dict[str, list[list[tuple[str, Any]]]]:
    """One output's rows per table, each row its (column, value) pairs sorted: the same
    whether the output holds a struct per row (the stage before arrays per table, with the
    raw key and value beside it) or an array of a table's rows per output row."""
    rows: dict[str, list[list[tuple[str, Any]]]] = {}
    for row in out.to_pylist():
        table = row["tbl"]
        value = row[table]
        if isinstance(value, list):
            found = value
        elif table == "quarantine":
            found = [{**value, "key": row["key"], "value": row["value"]}]
        else:
            found = [value]
        rows.setdefault(table, []).extend(sorted(r.items()) for r in found)
    return rows


def _run(src: str | None, groups: int) -> dict[str, Any]:
    """One pass in a subprocess, by the code under ``src`` (this tree's when None)."""
    env = dict(os.environ)
    if src is not None:
        env["BENCH_MODEL_WORKER_SRC"] = src
        env["PYTHONPATH"] = src  # the Spark session's Python too
    out = subprocess.run(
        [sys.executable, __file__, "--groups", str(groups), "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--baseline", action="append", default=[], help="a tree whose src to time")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    inputs = model_inputs(args.groups)
    if args.json or args.profile:
        print(json.dumps(one_pass(inputs, args.profile)), flush=True)
        return 0
    versions: list[tuple[str, str | None]] = [
        *((str(b), str(Path(b) / "src")) for b in args.baseline),
        ("this tree", None),
    ]
    print(
        f"bench_model_worker: {args.groups} groups' start-up through the worker function; "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    best: dict[str, dict[str, Any]] = {}
    for attempt in range(args.repeat):
        for name, src in versions:
            result = _run(src, args.groups)
            print(f"  [{attempt + 1}/{args.repeat}] {name}: {json.dumps(result)}", flush=True)
            if name not in best or result["cpu_seconds"] < best[name]["cpu_seconds"]:
                best[name] = result
    hashes = {r["rows_sha256"] for r in best.values()}
    print("best CPU seconds: " + ", ".join(f"{n} {r['cpu_seconds']}" for n, r in best.items()))
    ours = best["this tree"]["cpu_seconds"]
    for name, result in best.items():
        if name != "this tree":
            print(f"  this tree / {name}: {ours / result['cpu_seconds']:.3f}")
    print("rows: " + ("the same in every version" if len(hashes) == 1 else f"DIFFER {hashes}"))
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
