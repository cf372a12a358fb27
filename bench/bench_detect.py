"""Benchmark: group snapshots analysed per second by the findings engine.

    .venv/bin/python bench/bench_detect.py [--sizes 10,100,1000] [--snapshots N] [--seconds S]

For groups of 10, 100 and 1,000 members (10 topics, 4 partitions per member in all), each
snapshot is one generation of a steady group: every member claims what it was assigned in the
previous generation and keeps it.  Timed: the decoder-contract JSON object -> event (adapter),
every per-snapshot rule including the re-run of Kafka's sticky assignor for the sticky
protocols, the cross-snapshot rules, and the state update -- i.e. ``Analyzer.feed`` per line.
``range`` (no assignor re-run) shows what the assignor costs.  ``sticky-v0`` is ``sticky`` as
clients before 2.3 write it (subscription v0, user data v0 with no generation): the group state
then keeps the last completed generations, and claims are checked against them.

``--baseline DIR`` also runs another checkout's engine (``DIR`` is its ``src``, e.g. the merge
base unpacked with ``git archive``) on the same groups, in a child process of the same run, and
prints this engine's rate as a ratio of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(ROOT / "src")
sys.path.insert(0, _SRC)

from groupwatch.detect import Analyzer, DetectorConfig  # noqa: E402

TOPICS = 10


def group_lines(variant: str, members: int, snapshots: int) -> list[dict[str, Any]]:
    protocol = "sticky" if variant == "sticky-v0" else variant
    old = variant == "sticky-v0"
    per_topic = max(1, members * 4 // TOPICS)
    tps = [(f"topic{t}", p) for t in range(TOPICS) for p in range(per_topic)]
    ids = [f"consumer-{i:04d}-0b7e2a" for i in range(members)]
    assigned: dict[str, list[tuple[str, int]]] = {m: [] for m in ids}
    for i, tp in enumerate(tps):
        assigned[ids[i % members]].append(tp)

    def tp_json(xs: list[tuple[str, int]]) -> list[dict[str, Any]]:
        by: dict[str, list[int]] = {}
        for t, p in xs:
            by.setdefault(t, []).append(p)
        return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by.items())]

    lines = []
    for s in range(snapshots):
        generation = 10 + s
        members_json = []
        for m in ids:
            own = tp_json(assigned[m])
            members_json.append(
                {
                    "member_id": m,
                    "group_instance_id": None,
                    "client_id": "bench",
                    "client_host": "/10.0.0.1",
                    "rebalance_timeout": 300000,
                    "session_timeout": 45000,
                    "subscription": {
                        "version": 0 if old else 3,
                        "topics": [f"topic{t}" for t in range(TOPICS)],
                        "owned_partitions": own if protocol == "cooperative-sticky" else [],
                        "generation_id": generation - 1,
                        "rack_id": None,
                        "user_data": (
                            {"kind": "cooperative-sticky", "generation": generation - 1}
                            if protocol == "cooperative-sticky"
                            else {
                                "kind": "sticky",
                                "version": 0 if old else 1,
                                "previous_assignment": own,
                                "generation": None if old else generation - 1,
                            }
                            if protocol == "sticky"
                            else None
                        ),
                    },
                    "assignment": {"version": 3, "assigned_partitions": own, "user_data": None},
                    "subscription_error": None,
                    "assignment_error": None,
                }
            )
        lines.append(
            {
                "topic": "__consumer_offsets",
                "partition": 7,
                "offset": s,
                # 10 minutes apart: no storm, no churn finding (the group really is stable).
                "timestamp": 1_700_000_000_000 + s * 600_000,
                "record_type": "group_metadata",
                "record_type_id": 2,
                "group": f"bench-{variant}-{members}",
                "tombstone": False,
                "key": {"group": f"bench-{variant}-{members}"},
                "value": {
                    "version": 3,
                    "protocol_type": "consumer",
                    "generation": generation,
                    "protocol": protocol,
                    "leader": ids[0],
                    "current_state_timestamp": 1_700_000_000_000,
                    "members": members_json,
                },
                "error": None,
            }
        )
    return lines


#: The clock rates are measured on: wall time, or this process's CPU time (``--cpu``), steadier
#: on a machine other work shares.
CLOCK = time.perf_counter


def bench(protocol: str, members: int, snapshots: int, seconds: float) -> tuple[float, int]:
    lines = group_lines(protocol, members, snapshots)
    config = DetectorConfig(churn_generations=10**9)
    analyzer = Analyzer(config)
    analyzer.feed(lines[0])  # warm-up (first snapshot of the group)
    done, findings = 0, 0
    start = CLOCK()
    while True:
        for line in lines[1:]:
            findings += sum(f.severity != "info" for f in analyzer.feed(line))
            done += 1
        if CLOCK() - start >= seconds:
            break
        analyzer = Analyzer(config)
        analyzer.feed(lines[0])
    return done / (CLOCK() - start), findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--protocols", default="cooperative-sticky,sticky,range")
    ap.add_argument("--snapshots", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--src", default=None, help="the engine's source tree (default: this one)")
    ap.add_argument("--baseline", default=None, help="another engine's source tree to compare")
    ap.add_argument("--json", action="store_true", help="print {case: rate} as JSON only")
    ap.add_argument("--cpu", action="store_true", help="rates per second of CPU time")
    args = ap.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    base: dict[str, float] = {}
    if args.baseline:
        child = [sys.executable, __file__, "--src", args.baseline, "--json"]
        child += ["--cpu"] if args.cpu else []
        for flag in ("sizes", "protocols", "snapshots", "seconds"):
            child += [f"--{flag}", str(getattr(args, flag))]
        base = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
    rates: dict[str, float] = {}
    if not args.json:
        head = f"{'protocol':<20}{'members':>8}{'partitions':>12}{'snapshots/s':>14}"
        print(head + (f"{'baseline':>14}{'ratio':>8}" if base else ""))
    for protocol in args.protocols.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            rate, serious = bench(protocol, size, args.snapshots, args.seconds)
            rates[f"{protocol}/{size}"] = rate
            parts = TOPICS * max(1, size * 4 // TOPICS)
            if not args.json:
                row = f"{protocol:<20}{size:>8}{parts:>12}{rate:>14,.1f}"
                was = base.get(f"{protocol}/{size}")
                print(row + (f"{was:>14,.1f}{rate / was:>8.2f}" if was else ""))
            assert serious == 0, f"a steady {protocol} group raised {serious} findings"
    if args.json:
        print(json.dumps(rates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
