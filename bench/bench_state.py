"""Benchmark: one group's saved state (``SavedGroupState``) to the ``group_state`` text and back.

    .venv/bin/python bench/bench_state.py [--groups 6] [--generations 50] [--per-batch 10]
        [--repeat 5]

What every Python worker does for every group of every micro-batch around ``process_group``:
decode the group's saved state from the table's text, and encode the next one.  Two sets of
states, each group's state as its last batch saved it:

- ``library``: the classic scenario library's groups (``groupwatch_dev.scenarios``), small
  states of every kind of incident, each group's records one batch each;
- ``bench_job``: ``bench_job``'s 50-member sticky and cooperative-sticky groups (the records
  ``bench_worker`` times), ``--generations`` records each, ``--per-batch`` at a time.

Printed per set: the mean and largest text (UTF-8 bytes) and the time per group to encode and
to decode, best of ``--repeat`` passes (CPU time of this thread; the whole typed state, not just
the JSON codec, with the codec's share in brackets).  Alternatives measured on the same states,
when importable (none is a dependency; install them elsewhere and put them on ``PYTHONPATH`` to
compare): compact JSON separators, ``orjson`` and ``msgpack``.  Only the first is readable where
the table's ``state`` column is (a string); the others would change what rows hold, and each
writes different bytes from rows already written.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_job import (  # noqa: E402
    BASE_MS,
    GENERATION_GAP_MS,
    PROTOCOLS,
    coordinator_partition,
    group_values,
)

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import processing  # noqa: E402
from groupwatch.detect import DetectorConfig  # noqa: E402
from groupwatch.group_state import SavedGroupState  # noqa: E402
from groupwatch.protocol import GroupMetadataKey, encode_key  # noqa: E402

NOW = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

#: name -> (value to bytes, bytes to value); the JSON-able value is SavedGroupState.to_json's.
Codec = tuple[Callable[[Any], bytes], Callable[[bytes], Any]]


def codecs() -> dict[str, Codec]:
    out: dict[str, Codec] = {
        "json (stored)": (
            lambda d: json.dumps(d, sort_keys=True).encode(),
            lambda b: json.loads(b),
        ),
        "json compact": (
            lambda d: json.dumps(d, sort_keys=True, separators=(",", ":")).encode(),
            lambda b: json.loads(b),
        ),
    }
    try:
        import orjson  # type: ignore[import-not-found]

        out["orjson"] = (lambda d: orjson.dumps(d, option=orjson.OPT_SORT_KEYS), orjson.loads)
    except ImportError:
        pass
    try:
        import msgpack  # type: ignore[import-not-found]

        out["msgpack"] = (
            lambda d: msgpack.packb(d),
            lambda b: msgpack.unpackb(b, strict_map_key=False),
        )
    except ImportError:
        pass
    return out


def _run(
    group: str,
    batches: list[list[processing.SourceRecord]],
    detector: DetectorConfig,
) -> SavedGroupState | None:
    """The group's batches through the job's step, the state crossing them as text."""
    text: str | None = None
    state: SavedGroupState | None = None
    for records in batches:
        result = processing.process_group(
            group,
            None if text is None else SavedGroupState.decode(text),
            records,
            detector=detector,
            detected_at=NOW,
            clocks={records[-1].partition: records[-1].timestamp_ms},
        )
        state = None if result.deleted else result.state
        text = None if state is None else state.encode()
    return state


def library_states() -> list[SavedGroupState]:
    from groupwatch_dev.scenarios.builder import load, raw_records, scenario_files

    out = []
    for path in scenario_files():
        doc = load(path)
        detector = DetectorConfig(partitions_per_topic=doc.get("partitions") or {})
        by_group: dict[str, list[processing.SourceRecord]] = defaultdict(list)
        for r in raw_records(doc):
            key, value = (
                None if t is None else base64.b64decode(t) for t in (r["key"], r["value"])
            )
            rec = processing.SourceRecord(
                key, value, r["topic"], r["partition"], r["offset"], r["timestamp"]
            )
            by_group[processing.decode(rec).group or ""].append(rec)
        for group, records in sorted(by_group.items()):
            records.sort(key=lambda r: (r.partition, r.offset))
            state = _run(group, [[r] for r in records], detector)
            if state is not None:
                out.append(state)
    return out


def bench_job_states(groups: int, generations: int, per_batch: int) -> list[SavedGroupState]:
    detector = config_mod.load(ROOT / "conf" / "local.toml", env={}).detect.detector()
    values = {p: group_values(p, generations) for p in PROTOCOLS}
    out = []
    for g in range(groups):
        name = f"bench-app-{g:04d}"
        key = encode_key(GroupMetadataKey(name))
        partition = coordinator_partition(name)
        records = [
            processing.SourceRecord(
                key, value, "mirror", partition, n, BASE_MS + (n + 1) * GENERATION_GAP_MS
            )
            for n, value in enumerate(values[PROTOCOLS[g % 2]])
        ]
        batches = [records[i : i + per_batch] for i in range(0, len(records), per_batch)]
        state = _run(name, batches, detector)
        assert state is not None
        out.append(state)
    return out


def _best(repeat: int, work: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.thread_time()
        work()
        best = min(best, time.thread_time() - started)
    return best


def _each(f: Callable[[Any], Any], xs: list[Any]) -> Callable[[], None]:
    def work() -> None:
        for x in xs:
            f(x)

    return work


def measure(name: str, states: list[SavedGroupState], repeat: int) -> None:
    n = len(states)
    docs = [s.to_json() for s in states]
    texts = [s.encode() for s in states]
    assert all(SavedGroupState.decode(t) == s for t, s in zip(texts, states, strict=True))
    print(f"{name}: {n} groups", flush=True)
    print(
        f"  {'encoding':<14} {'mean B':>8} {'max B':>8} "
        f"{'encode us (codec)':>20} {'decode us (codec)':>20}"
    )
    to_doc = _best(repeat, lambda: [s.to_json() for s in states])
    from_doc = _best(repeat, lambda: [SavedGroupState.from_json(d) for d in docs])
    for label, (dump, load) in codecs().items():
        blobs = [dump(d) for d in docs]
        assert all(
            SavedGroupState.from_json(load(b)) == s for b, s in zip(blobs, states, strict=True)
        )
        dumping = _best(repeat, _each(dump, docs))
        loading = _best(repeat, _each(load, blobs))
        sizes = [len(b) for b in blobs]
        us = 1e6 / n
        print(
            f"  {label:<14} {statistics.fmean(sizes):>8,.0f} {max(sizes):>8,} "
            f"{(to_doc + dumping) * us:>10,.1f} ({dumping * us:>6,.1f}) "
            f"{(from_doc + loading) * us:>10,.1f} ({loading * us:>6,.1f})",
            flush=True,
        )
    # The stored encoding as the job calls it, for the record.
    encoding = _best(repeat, lambda: [s.encode() for s in states])
    decoding = _best(repeat, lambda: [SavedGroupState.decode(t) for t in texts])
    print(
        f"  SavedGroupState.encode {encoding * 1e6 / n:,.1f} us, "
        f".decode {decoding * 1e6 / n:,.1f} us per group"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=6)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--per-batch", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench_state: {os.cpu_count()} cores, load {load}; codecs {', '.join(codecs())}")
    measure("library", library_states(), args.repeat)
    measure(
        f"bench_job ({args.generations} generations, {args.per_batch} per batch)",
        bench_job_states(args.groups, args.generations, args.per_batch),
        args.repeat,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
