"""Benchmark: group snapshots analysed per second by the findings engine.

    .venv/bin/python bench/bench_detect.py [--sizes 10,100,1000] [--snapshots N] [--seconds S]

For groups of 10, 100 and 1,000 members (10 topics, 4 partitions per member in all), each
snapshot is one generation of a steady group: every member claims what it was assigned in the
previous generation and keeps it.  Timed: the decoder-contract JSON object -> event (adapter),
every per-snapshot rule including the re-run of Kafka's sticky assignor for the sticky
protocols, the cross-snapshot rules, and the state update -- i.e. ``Analyzer.feed`` per line.
``range`` (no assignor re-run) shows what the assignor costs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch.detect import Analyzer, DetectorConfig  # noqa: E402

TOPICS = 10


def group_lines(protocol: str, members: int, snapshots: int) -> list[dict[str, Any]]:
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
                        "version": 3,
                        "topics": [f"topic{t}" for t in range(TOPICS)],
                        "owned_partitions": own if protocol == "cooperative-sticky" else [],
                        "generation_id": generation - 1,
                        "rack_id": None,
                        "user_data": (
                            {"kind": "cooperative-sticky", "generation": generation - 1}
                            if protocol == "cooperative-sticky"
                            else {
                                "kind": "sticky",
                                "version": 1,
                                "previous_assignment": own,
                                "generation": generation - 1,
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
                "group": f"bench-{protocol}-{members}",
                "tombstone": False,
                "key": {"group": f"bench-{protocol}-{members}"},
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


def bench(protocol: str, members: int, snapshots: int, seconds: float) -> tuple[float, int]:
    lines = group_lines(protocol, members, snapshots)
    config = DetectorConfig(churn_generations=10**9)
    analyzer = Analyzer(config)
    analyzer.feed(lines[0])  # warm-up (first snapshot of the group)
    done, findings = 0, 0
    start = time.perf_counter()
    while True:
        for line in lines[1:]:
            findings += sum(f.severity != "info" for f in analyzer.feed(line))
            done += 1
        if time.perf_counter() - start >= seconds:
            break
        analyzer = Analyzer(config)
        analyzer.feed(lines[0])
    return done / (time.perf_counter() - start), findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--protocols", default="cooperative-sticky,sticky,range")
    ap.add_argument("--snapshots", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    print(f"{'protocol':<20}{'members':>8}{'partitions':>12}{'snapshots/s':>14}")
    for protocol in args.protocols.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            rate, serious = bench(protocol, size, args.snapshots, args.seconds)
            parts = TOPICS * max(1, size * 4 // TOPICS)
            print(f"{protocol:<20}{size:>8}{parts:>12}{rate:>14,.1f}")
            assert serious == 0, f"a steady {protocol} group raised {serious} findings"
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
