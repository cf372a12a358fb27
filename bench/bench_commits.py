"""Benchmark: offset-commit lines per second through ``Analyzer.feed`` (``groupwatch analyze``).

    .venv/bin/python bench/bench_commits.py [--baseline-src DIR] [--generations N] [--repeat R]

Most of ``__consumer_offsets`` is offset commits.  The job never hands them to Python one by one
(the JVM aggregates them), but ``analyze`` reads every one: a steady 10-member ``range`` group,
200 commits per generation.  Timed in CPU time of this process (best of ``--repeat``), so other
jobs on the machine disturb it less.  ``--baseline-src`` is another revision's ``src`` (made with
``git archive REV src | tar -x -C DIR``): both are timed in this run, alternating, in their own
interpreters, and the ratio printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch_dev.scenarios.builder import decoded_lines
generations, repeat = int(sys.argv[2]), int(sys.argv[3])
records, t = [], 0.0
for g in range(1, generations + 1):
    records.append({"group": "g", "generation": g, "protocol": "range", "version": 3, "time": t,
                    "members": [{"id": f"M{i}-1", "version": 3, "topics": ["t"],
                                 "generation_id": "prev", "assigned": {"t": [i]}}
                                for i in range(10)]})
    for k in range(200):
        t += 0.05
        records.append({"commit": {"group": "g", "topic": "t", "partition": k % 10}, "time": t})
    t += 1
lines = decoded_lines({"records": records})
best = None
for _ in range(repeat):
    analyzer = Analyzer(DetectorConfig(partitions_per_topic={"t": 10}))
    start = time.process_time()
    for line in lines:
        analyzer.feed(line)
    took = time.process_time() - start
    best = took if best is None else min(best, took)
print(len(lines) / best)
"""


def rate(src: Path, generations: int, repeat: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(src), str(generations), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-src", type=Path)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for r in range(args.rounds):
        here = rate(ROOT / "src", args.generations, args.repeat)
        line = f"round {r + 1}: this tree {here:,.0f} lines/s"
        if args.baseline_src:
            base = rate(args.baseline_src, args.generations, args.repeat)
            line += f", baseline {base:,.0f} lines/s, ratio {here / base:.2f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
