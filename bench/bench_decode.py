"""Decode throughput of group-metadata records with 10, 100 and 1,000 members: groupwatch's
pure-Python decoder next to Kafka's own Java deserialiser, on the same bytes, in the same run.

    .venv/bin/python bench/bench_decode.py [--seconds 3]

Each record is a GroupMetadataValue v3 (what 4.x brokers write) of a cooperative-sticky consumer
group; every member subscribes to 4 topics, owns and is assigned 4 partitions (subscription v3
with rack, assignment v3).  Two figures per size:

* outer: key + GroupMetadataValue only (Kafka: GroupCoordinatorRecordSerde.deserialize)
* full: plus every member's subscription, assignment and assignor user data (ours:
  decode_record; Kafka: the serde plus ConsumerProtocol.deserializeSubscription/Assignment)

A third Python figure, "full interp", decodes the same bytes with the schema interpreter alone
(``codec.interpreted``) instead of the generated readers, and "gain" is generated / interpreted.

The Java figures need the harness jar (scripts/setup); without it only Python is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch.protocol import (  # noqa: E402
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    TopicPartitions,
    decode_key,
    decode_record,
    decode_value,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_key,
    encode_subscription,
    encode_value,
)

SIZES = (10, 100, 1000)
TOPICS = ("orders", "payments", "refunds", "shipments")


def group_record(members: int) -> tuple[bytes, bytes]:
    ms = []
    for i in range(members):
        owned = tuple(TopicPartitions(t, (i,)) for t in TOPICS)
        sub = ConsumerProtocolSubscription(
            3, TOPICS, encode_cooperative_sticky_user_data(41), owned, 41, f"rack-{i % 3}"
        )
        asg = ConsumerProtocolAssignment(3, owned, None)
        ms.append(
            MemberMetadata(
                f"consumer-{i}-5f0c8a0e-2b7d-4d8e-9a51-{i:012d}",
                f"client-{i}",
                f"/10.0.{i // 250}.{i % 250}",
                45000,
                encode_subscription(sub),
                encode_assignment(asg),
                f"pod-{i}",
                300000,
            )
        )
    value = GroupMetadataValue(
        "consumer", 42, "cooperative-sticky", ms[0].member_id, tuple(ms), 1700000000000
    )
    return encode_key(GroupMetadataKey("bench-group")), encode_value(value, 3)


def rate(fn: Callable[[], object], seconds: float) -> float:
    fn()  # warm caches (compiled schemas)
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


@contextlib.contextmanager
def interpreter_only() -> Iterator[None]:
    """Decode with the schema interpreter instead of the generated readers."""
    from groupwatch.protocol import codec

    generated = codec.compiled
    codec.compiled = codec.interpreted  # type: ignore[assignment]
    try:
        yield
    finally:
        codec.compiled = generated  # type: ignore[assignment]


def java_rates(
    records: dict[int, tuple[bytes, bytes]], seconds: float
) -> dict[int, dict[str, float]]:
    jars = ROOT / ".groupwatch" / "jars" / "kafka"
    if not (jars / "groupwatch-oracle.jar").exists():
        return {}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for n, (k, v) in records.items():
            f.write(f"{n} {k.hex()} {v.hex()}\n")
    out = subprocess.run(
        ["java", "-cp", f"{jars}/*", "groupwatch.oracle.RecordBench", f.name, str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    Path(f.name).unlink()
    rows = [json.loads(line) for line in out.split("\n") if line.strip()]
    return {row["members"]: row for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per figure")
    args = parser.parse_args()
    records = {n: group_record(n) for n in SIZES}
    java = java_rates(records, args.seconds)
    print(
        f"python {sys.version.split()[0]}, {args.seconds:g}s per figure; records/s (Java / Python)"
    )
    print(
        f"{'members':>7} {'bytes':>9} | {'outer py':>9} {'outer java':>11} {'ratio':>6} | "
        f"{'full py':>8} {'full java':>10} {'ratio':>6} | {'full interp':>11} {'gain':>5}"
    )
    for n, (k, v) in records.items():

        def outer(k: bytes = k, v: bytes = v) -> object:
            rt, _ = decode_key(k)
            return decode_value(rt, v)

        def full(k: bytes = k, v: bytes = v, n: int = n) -> object:
            rec = decode_record(k, v)
            assert rec.error is None and len(rec.members) == n
            return rec

        po, pf = rate(outer, args.seconds), rate(full, args.seconds)
        with interpreter_only():
            pi = rate(full, args.seconds)
        j = java.get(n)
        jo = f"{j['outer_rps']:11.0f}" if j else f"{'n/a':>11}"
        jf = f"{j['full_rps']:10.0f}" if j else f"{'n/a':>10}"
        ro = f"{j['outer_rps'] / po:5.0f}x" if j else f"{'':>6}"
        rf = f"{j['full_rps'] / pf:5.0f}x" if j else f"{'':>6}"
        print(
            f"{n:>7} {len(v):>9} | {po:9.0f} {jo} {ro} | {pf:8.0f} {jf} {rf} | "
            f"{pi:11.0f} {pf / pi:4.1f}x"
        )


if __name__ == "__main__":
    main()
