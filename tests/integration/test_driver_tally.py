"""Each batch's line says what it brought to the driver (spark/driver_tally.py), and the two
paths of a batch tell apart: a small batch's records and commits come to the driver; with the
Python stage in Spark's workers and every table written by Spark, neither they nor the
output or its writes do."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from groupwatch_dev.demo.traffic import create_topic, produce, scale_out_group
from tests.realgroups import make_config

pytestmark = [pytest.mark.broker, pytest.mark.spark]

_LINE = re.compile(r"batch \d+: .*; to the driver (nothing|[\d,]+ rows \S+ \S+ \((?P<parts>.*)\));")


def _run(spark, cfg) -> None:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` in this process: its batch lines logged at the end."""
    from groupwatch.spark.query import GroupwatchQuery

    job = GroupwatchQuery.from_config(spark, cfg)
    job.writer(once=True).start().awaitTermination(600)
    job.batch_log.flush()
    job.close()


def _parts(caplog: pytest.LogCaptureFixture) -> list[set[str]]:
    """The purposes named by each batch line logged so far."""
    lines = [m for r in caplog.records if (m := _LINE.search(r.getMessage()))]
    return [{p.rsplit(" ", 3)[0] for p in (m["parts"] or "").split(", ") if p} for m in lines]


def test_the_batch_line_names_what_came_to_the_driver_on_each_path(
    spark, broker: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    # A real group that joins, grows to two members and commits.
    create_topic(broker, "tally", 2)
    produce(broker, "tally", [(None, b"t-%d" % i) for i in range(20)])
    assert scale_out_group(broker, "tally-group", "tally", partitions=2, size=2, consume=20) >= 20
    caplog.set_level(logging.INFO, logger="groupwatch.job")
    on_driver = make_config(broker, tmp_path / "driver", "validation.every_n_batches=0")
    _run(spark, on_driver)
    [driver] = _parts(caplog)
    # A small batch: its records and commits collected for the Python stage and the commit
    # aggregates on the driver (whose output is there already, written with delta-rs).
    assert {"records", "commits"} <= driver, driver
    caplog.clear()
    in_spark = make_config(
        broker,
        tmp_path / "spark",
        "validation.every_n_batches=0",
        "job.driver_stage_rows=0",
        "delta.driver_write_rows=0",
    )
    _run(spark, in_spark)
    [spark_path] = _parts(caplog)
    assert not spark_path & {"records", "output", "writes", "commits"}, spark_path
