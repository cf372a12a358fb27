"""Malformed keys in the stream: never dropped, never fatal.

Offset commits are aggregated in the JVM and never reach Python, so a commit key that the
decoder would reject must be recognised there and sent to Python, to become a quarantine row
with its bytes; and a key whose group is not UTF-8 must not fail the batch.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from groupwatch.protocol import OffsetCommitValue, decode_record, encode_value
from groupwatch_dev.demo.traffic import create_topic, produce
from tests.integration.test_spark_keys import commit, kstr
from tests.realgroups import make_config, run_once, table

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "bad-keys-mirror"
VALUE = encode_value(OffsetCommitValue(42, "", 1_700_000_000_000, -1), 3)

GOOD = [commit("ok-group", "orders", p) for p in (0, 3, 1, 3)]
BAD = [
    commit("ok-group", "orders", 5) + b"\x00",  # a byte after the partition
    commit("ok-group", "orders", 9)[:-2],  # partition cut short
    struct.pack(">h", 1) + kstr("cut") + b"\x00",
    commit(b"\xff\xfe", "orders", 1),  # group not UTF-8
    b"\x00\x01",
    struct.pack(">h", 2) + kstr(b"\xc3\x28"),  # a group-metadata key, group not UTF-8
]


def test_malformed_keys_are_quarantined_and_good_commits_counted(
    spark, broker: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    create_topic(broker, MIRROR, 3)
    produce(broker, MIRROR, [(k, VALUE) for k in GOOD + BAD])
    cfg = make_config(broker, tmp_path, f"source.topic={MIRROR}")
    run_once(spark, cfg)

    offsets = [r.asDict() for r in table(spark, cfg, "group_offsets").collect()]
    assert [(r["group"], r["topic"], r["max_partition"], r["commits"]) for r in offsets] == [
        ("ok-group", "orders", 3, 4)
    ]
    quarantine = table(spark, cfg, "quarantine").collect()
    got = sorted((bytes(q.key), q.stage, q.error_kind, q.field_path) for q in quarantine)
    expected = []
    for key in BAD:
        error = decode_record(key, VALUE).error
        assert error is not None, key
        expected.append((key, "decode", error.kind, error.field_path))
    assert got == sorted(expected)
    assert all(bytes(q.value) == VALUE for q in quarantine)


@pytest.mark.parametrize(("driver_stage_rows", "where"), [("20000", "driver"), ("0", "workers")])
def test_the_step_clock_is_told_every_step_of_a_batch_in_order(
    spark, broker: str, tmp_path: Path, driver_stage_rows: str, where: str
) -> None:  # type: ignore[no-untyped-def]
    """The hook the benchmarks time a batch through: each step once, in the batch's order,
    the steps within the whole batch's time; the Python stage's step says where it ran (a
    batch this small on the driver, unless ``job.driver_stage_rows`` is 0, when the commits'
    one pass is a step too)."""
    from groupwatch.spark import query

    topic = f"bad-keys-steps-{where}"
    create_topic(broker, topic, 1)
    produce(broker, topic, [(k, VALUE) for k in GOOD + BAD[:1]])
    told: list[tuple[str, float]] = []
    cfg = make_config(
        broker, tmp_path, f"source.topic={topic}", f"job.driver_stage_rows={driver_stage_rows}"
    )
    run_once(spark, cfg, step_clock=lambda name, seconds: told.append((name, seconds)))

    python = query.DRIVER_PYTHON if where == "driver" else query.PYTHON
    names = [name for name, _ in told]
    # On the Spark path both commit aggregates come from one pass, a step of its own.
    commit_pass = [query.COMMIT_PASS] if where == "workers" else []
    assert names == [
        query.CAUGHT_UP,
        *commit_pass,
        query.OFFSETS,
        query.COMMITTED,
        query.DUE,
        python,  # the malformed key goes to Python, and so the outputs are written
        query.VALIDATION,
        query.OUTPUTS,
        query.STATE,
        query.LAG,
        query.UPKEEP,
        query.BATCH,
    ]
    seconds = dict(told)
    assert all(s >= 0 for s in seconds.values())
    inner = seconds[python] + seconds[query.VALIDATION]
    assert inner <= seconds[query.OUTPUTS]
    outer = sum(s for n, s in told if n not in (python, query.VALIDATION, query.BATCH))
    assert outer <= seconds[query.BATCH]
