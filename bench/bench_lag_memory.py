"""Benchmark: what the lag keeper holds, and what it writes to ``end_offsets``, over a long run.

    .venv/bin/python bench/bench_lag_memory.py [--partitions 500] [--hours 24]
        [--busy 0.5] [--behind 0.02] [--poll-seconds 15]

A fleet of ``--partitions`` partitions polled every ``--poll-seconds`` for ``--hours`` of
simulated time (no brokers, no tables: the keeper alone, as the job's poll drives it). A
``--busy`` share of the partitions gets 100 records a poll, the rest none; every partition has
a group that commits at most a poll behind, and a ``--behind`` share also has a group that
stopped at the start (its offset far behind the log end for the whole run).  The same polls
are run through the job's keeper and through the keeper without the history's cut at the
committed offsets (``trim=False``, whose history only the 2,048-point cap bounds), writing
every answer as a row as the job did, one after the other, and compared: points and bytes held per
partition at the end, ``end_offsets`` rows a day, and a poll's judgement time.  The two
agree on every row of the last poll (checked; a seek back is the only case where they may
not, and this fleet has none).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch.config import LagConfig  # noqa: E402
from groupwatch.detect.lag.judge import LagRules  # noqa: E402
from groupwatch.detect.lag.model import Commit, EndOffset  # noqa: E402
from groupwatch.detect.lag.poll import LagKeeper, PollResult  # noqa: E402


def _held(keeper: LagKeeper) -> tuple[int, int]:
    """Points held and their bytes (the lists and the points; not the tracks)."""
    points = sum(len(p) for p in keeper.history.values())
    one = sys.getsizeof(EndOffset("t", 0, 0, 0, 0))
    lists = sum(sys.getsizeof(p) for p in keeper.history.values())
    return points, points * one + lists


def _run(
    keeper: LagKeeper, args: argparse.Namespace, every_answer: bool
) -> tuple[PollResult, dict[str, float]]:
    n = args.partitions
    busy = int(n * args.busy)
    behind = int(n * args.behind)
    step_ms = args.poll_seconds * 1000
    polls = args.hours * 3600 // args.poll_seconds
    ends = [1_000] * n
    rows = 0
    judging = 0.0
    result = PollResult([], [], [], [])
    print(f"  {polls:,} polls of {n:,} partitions", flush=True)
    for i in range(polls):
        at = i * step_ms
        for p in range(busy):
            ends[p] += 100
        answers = [EndOffset("t", p, 0, ends[p], at) for p in range(n)]
        written = keeper.observe(answers)
        rows += len(answers) if every_answer else len(written)
        keeper.forget_older(at - 168 * 3_600_000)
        commits = [Commit("stopped", "t", p, 1_000, 0, moved_ms=0) for p in range(behind)]
        commits += [
            Commit("steady", "t", p, ends[p] - (100 if p < busy else 0), at, moved_ms=at)
            for p in range(n)
        ]
        gc.disable()  # as the job's poller has it (bench/bench_lag_judge.py --gc)
        began = time.perf_counter()
        result = keeper.judge(commits, {})
        judging += time.perf_counter() - began
        gc.enable()
        if (i + 1) % max(1, polls // 4) == 0:
            points, held = _held(keeper)
            print(
                f"  {(i + 1) * args.poll_seconds / 3600:6.1f} h: {points / n:8.1f} points, "
                f"{held / n / 1024:8.1f} KB a partition",
                flush=True,
            )
    points, held = _held(keeper)
    days = args.hours / 24
    return result, {
        "points a partition": points / n,
        "KB a partition": held / n / 1024,
        "end_offsets rows a day": rows / days,
        "judgement ms a poll": judging / polls * 1000,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--partitions", type=int, default=500)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--busy", type=float, default=0.5)
    ap.add_argument("--behind", type=float, default=0.02)
    ap.add_argument("--poll-seconds", type=int, default=15)
    args = ap.parse_args()
    rules = LagRules(poll_ms=args.poll_seconds * 1000)
    print("baseline: no cut at the committed offsets, every answer a row", flush=True)
    before, base = _run(LagKeeper(rules, trim=False), args, every_answer=True)
    print("the job's keeper", flush=True)
    row_ms = LagConfig().history_row_seconds * 1000  # the shipped default
    after, now = _run(LagKeeper(rules, row_ms=row_ms), args, every_answer=False)
    if before.rows != after.rows:
        print("the two keepers judged the last poll differently", file=sys.stderr)
        return 1
    print(f"\n{'':28} {'baseline':>14} {'now':>14} {'ratio':>8}")
    for name, b in base.items():
        a = now[name]
        print(f"{name:28} {b:14,.1f} {a:14,.1f} {a / b if b else float('nan'):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
