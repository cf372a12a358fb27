"""Great Expectations on the driver (``validation.arrow_views``, pandas) against the same
suites run by Spark (``validation.spark_views``) on the same rows: the derived columns value
for value, and every expectation's verdict, count and offenders, over random rows that break
each expectation now and then (nulls, empty names, negative generations and partitions, topics
outside the subscription, null topics and partition lists, every group type)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from groupwatch.delta import read as deltaread
from groupwatch.spark import validation

ROOT = Path(__file__).resolve().parents[2]


def _pick(rng: random.Random, *choices: Any) -> Any:
    return choices[rng.randrange(len(choices))]


def _assignment(rng: random.Random) -> list[dict[str, Any]] | None:
    if rng.random() < 0.1:
        return None
    out = []
    for _ in range(rng.randrange(4)):
        partitions = (
            None
            if rng.random() < 0.05
            else [_pick(rng, None, -1, 0, 1, 7, 12) for _ in range(rng.randrange(4))]
        )
        out.append({"topic": _pick(rng, "a", "b", "c", None), "partitions": partitions})
    return out


def _members(rng: random.Random, n: int) -> pa.Table:
    rows = []
    for k in range(n):
        rows.append(
            {
                "group": f"g{k % 7}",
                "generation": _pick(rng, 0, 3, 41, -2, None),
                "member_id": _pick(rng, f"m-{k}", f"m-{k}", "", None),
                "group_type": _pick(rng, "classic", "classic", "consumer", "streams", None),
                "topics": None
                if rng.random() < 0.1
                else [_pick(rng, "a", "b", None) for _ in range(rng.randrange(3))],
                "claim_generation": _pick(rng, -1, 4, -5, None),
                "assignment": _assignment(rng),
                "source_partition": rng.randrange(3),
                "source_offset": 1000 + k,
            }
        )
    schema = deltaread.schema("member_assignments")
    return pa.Table.from_pylist(rows, schema=pa.schema([schema.field(c) for c in rows[0]]))


def _snapshots(rng: random.Random, n: int) -> pa.Table:
    rows = [
        {
            "group": _pick(rng, f"g{k}", f"g{k}", None),
            "generation": _pick(rng, 0, 5, -1, None),
            "member_count": _pick(rng, 0, 3, -4, None),
            "source_partition": rng.randrange(3),
            "source_offset": _pick(rng, 500 + k, 500 + k, None),
        }
        for k in range(n)
    ]
    schema = deltaread.schema("group_snapshots")
    return pa.Table.from_pylist(rows, schema=pa.schema([schema.field(c) for c in rows[0]]))


def _verdicts(results: list[validation.ExpectationResult]) -> list[tuple[Any, ...]]:
    return sorted(
        (r.table_name, r.expectation, r.success, r.unexpected_count, tuple(sorted(r.offenders)))
        for r in results
    )


def test_the_driver_validates_as_spark_does(spark) -> None:  # type: ignore[no-untyped-def]
    validator = validation.BatchValidator(ROOT / "conf" / "expectations")
    failed = set()
    for seed in range(6):
        rng = random.Random(seed)
        members = _members(rng, 60)
        snapshots = _snapshots(rng, 30)

        spark_views = validation.spark_member_views(spark.createDataFrame(members)).toArrow()
        local_views = validation.member_views(members)
        for column in ("min_assigned_partition", "assigned_topics_subscribed"):
            assert local_views.column(column).to_pylist() == (
                spark_views.column(column).to_pylist()
            ), (seed, column)

        got: dict[str, list[validation.ExpectationResult]] = {"spark": [], "driver": []}
        views = {
            "spark": validation.spark_views(
                spark.createDataFrame(snapshots), spark.createDataFrame(members)
            ),
            "driver": validation.arrow_views(snapshots, members),
        }
        for where, frames in views.items():
            for name, frame in frames.items():
                got[where] += validator.validate(name, frame)
        assert _verdicts(got["driver"]) == _verdicts(got["spark"]), seed
        failed |= {(r.table_name, r.expectation) for r in got["spark"] if not r.success}
    # Every expectation of both suites failed at least once over the seeds.
    assert len(failed) == 10, sorted(failed)
