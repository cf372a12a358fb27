"""Benchmark: groupwatch's Python sticky assignor vs Kafka's Java one, same inputs, same run.

    .venv/bin/python bench/bench_assign.py [--cases a,b,c,d] [--warmup N] [--scale 1.0]

Cases (issue 4): (a) 2,000 members × 500 topics × 2,000 partitions (1,000,000 partitions), equal
subscriptions, fresh group; (b) the same with unequal subscriptions (the last member subscribes
to the first topic only, as in Kafka's testLargeAssignmentAndGroupWithNonEqualSubscription);
(c) 100 members × 10,000 partitions, every member at a stale generation with conflicting claims;
(d) a rebalance of (a)'s result after removing 10% of the members.  Java's time is measured inside
the JVM around ``assignor.assign(cluster, groupSubscription)``, ours around
:func:`groupwatch.assignor.assign`; ``--warmup N`` runs both N times first.  Both results are
compared member by member.  ``--profile`` prints the top of a cProfile of our side.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(1, str(ROOT))  # the Java oracle's client is in tests/

from tests.oracle.assign_client import JavaOracle, encode_case  # noqa: E402

from groupwatch.assignor import MemberSubscription, TopicPartition, assign  # noqa: E402

Case = tuple[str, dict[str, int], list[MemberSubscription]]


def _topics(n_topics: int, per_topic: int) -> dict[str, int]:
    return {f"topic{i:03d}": per_topic for i in range(n_topics)}


def case_a(scale: float) -> Case:
    ppt = _topics(int(500 * scale), 2000)
    topics = tuple(ppt)
    members = [MemberSubscription(f"consumer{i:04d}", topics) for i in range(int(2000 * scale))]
    return "cooperative-sticky", ppt, members


def case_b(scale: float) -> Case:
    protocol, ppt, members = case_a(scale)
    last = members[-1]
    members[-1] = MemberSubscription(last.member_id, (next(iter(ppt)),))
    return protocol, ppt, members


def case_c(scale: float) -> Case:
    ppt = _topics(10, int(1000 * scale))
    topics = tuple(ppt)
    n = 100
    all_tps = [TopicPartition(t, p) for t, c in ppt.items() for p in range(c)]
    members = []
    for i in range(n):
        current = all_tps[i::n]
        # also still claims what it held two generations ago (now somebody else's)
        older = all_tps[(i + 1) % n :: n][: len(current) // 2]
        generation = 4 if i % 2 else 5
        members.append(
            MemberSubscription(f"consumer-{i:03d}", topics, tuple(current + older), generation)
        )
    return "cooperative-sticky", ppt, members


def case_d(scale: float) -> Case:
    protocol, ppt, members = case_a(scale)
    first = assign(protocol, ppt, members)
    keep = [m for i, m in enumerate(members) if i % 10 != 3]
    return (
        protocol,
        ppt,
        [MemberSubscription(m.member_id, m.topics, first.assignment[m.member_id], 1) for m in keep],
    )


CASES: dict[str, tuple[str, Callable[[float], Case]]] = {
    "a": ("2000 members x 1M partitions, equal subscriptions", case_a),
    "b": ("2000 members x 1M partitions, unequal subscriptions", case_b),
    "c": ("100 members x 10k partitions, stale generations", case_c),
    "d": ("rebalance of (a) after removing 10% of members", case_d),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="a,b,c,d")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up runs per case, both sides")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="shrink (a), (b), (d) for a quick look"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile our side")
    args = parser.parse_args()

    java = shutil.which("java")
    jars = ROOT / ".groupwatch" / "jars" / "kafka"
    if java is None or not (jars / "groupwatch-oracle.jar").exists():
        print("needs java and the harness jar (scripts/setup)", file=sys.stderr)
        return 2
    print(f"{'case':<4} {'python s':>9} {'java s':>8} {'ratio':>6}  parity  description")
    with JavaOracle(java, f"{jars}/*", heap="8g") as oracle:
        for key in args.cases.split(","):
            label, build = CASES[key]
            protocol, ppt, members = build(args.scale)
            line = encode_case(protocol, ppt, members, warmup=args.warmup)
            java_answer = oracle.run_encoded(line)
            if "error" in java_answer:
                print(f"{key}: Kafka failed: {java_answer['error']}")
                continue
            for _ in range(args.warmup):  # the same warm-up as Java's
                assign(protocol, ppt, members)
            start = time.perf_counter()
            if args.profile:
                profiler = cProfile.Profile()
                ours = profiler.runcall(assign, protocol, ppt, members)
            else:
                ours = assign(protocol, ppt, members)
            ours_s = time.perf_counter() - start
            java_s = java_answer["nanos"] / 1e9
            same = all(
                sorted(ours.assignment[m.member_id])
                == sorted(TopicPartition(t, p) for t, p in java_answer["assignment"][m.member_id])
                for m in members
            )
            print(
                f"{key:<4} {ours_s:9.2f} {java_s:8.2f} {ours_s / java_s:6.2f}  "
                f"{'same' if same else 'DIFF'}    {label} [{ours.path}]",
                flush=True,
            )
            if args.profile:
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(12)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
