"""Benchmark: what a busy Python thread costs another thread's calls into the JVM.

    .venv/bin/python bench/bench_switch_interval.py [--calls 300]

A lag poll judges in a driver thread for seconds while a batch, in another thread, calls into
Spark's JVM through Py4J hundreds of times.  After each call's answer the calling thread waits
for the interpreter until the busy thread gives it up: at most the switch interval
(``sys.setswitchinterval``, 5 ms by default).  Prints the mean time of a trivial JVM call
alone, then beside a thread that keeps the interpreter busy, at several switch intervals, and
each as a ratio of the call alone (the baseline, in the same run); and what the busy thread got
done meanwhile, as a ratio of its pace alone (what a shorter interval costs the poll).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm

    def per_call(n: int) -> float:
        started = time.perf_counter()
        for _ in range(n):
            jvm.java.lang.System.currentTimeMillis()
        return (time.perf_counter() - started) / n * 1000

    per_call(50)
    alone = per_call(args.calls)
    print(f"a JVM call alone: {alone:.3f} ms")
    stop = threading.Event()
    rounds = [0]

    def busy() -> None:
        made: dict[int, tuple[int, str]] = {}
        while not stop.is_set():
            for i in range(1_000):
                made[i] = (i, str(i))
            rounds[0] += 1

    def pace(seconds: float) -> float:
        before, started = rounds[0], time.perf_counter()
        time.sleep(seconds)
        return (rounds[0] - before) / (time.perf_counter() - started)

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    alone_pace = pace(1.0)
    default = sys.getswitchinterval()
    try:
        for interval in (0.005, 0.001, 0.0005, 0.0002, 0.0001):
            sys.setswitchinterval(interval)
            per_call(50)
            before, started = rounds[0], time.perf_counter()
            took = per_call(args.calls)
            busy_pace = (rounds[0] - before) / (time.perf_counter() - started)
            print(
                f"beside a busy thread, switch interval {interval * 1000:.1f} ms: "
                f"{took:.3f} ms (x{took / alone:.1f}); the busy thread at "
                f"{busy_pace / alone_pace:.2f} of its pace alone",
                flush=True,
            )
    finally:
        sys.setswitchinterval(default)
        stop.set()
        thread.join()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
