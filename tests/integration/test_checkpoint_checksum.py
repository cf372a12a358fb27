"""A delta-rs checkpoint on a table Spark has checkpointed leaves Hadoop's checksum of
``_last_checkpoint`` stale, and Spark's reads of the table fail it (four attempts, then a
listing of the log: seconds per table).  The job's delta-rs writes remove a stale one
(``groupwatch.delta.checksum``); these tests hold that to Hadoop's own file system."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import write_deltalake

from groupwatch import tables
from groupwatch.delta import checksum
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite

pytestmark = pytest.mark.spark

APP = "groupwatch-job"


def _hadoop_read(spark: Any, path: Path) -> bytes:
    """``path`` read through Spark's Hadoop file system, which checks the file's sidecar."""
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(str(path))
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    stream = fs.open(hpath)
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def _checkpointed_by_spark(spark: Any, path: Path) -> Path:
    """A table Spark created and checkpointed (at every commit after the first): its
    ``_last_checkpoint``, beside which Hadoop wrote its sidecar."""
    frame = spark.range(3).withColumnRenamed("id", "n")
    frame.write.format("delta").option("delta.checkpointInterval", "1").save(str(path))
    frame.write.format("delta").mode("append").save(str(path))
    last = path / "_delta_log" / "_last_checkpoint"
    assert checksum.sidecar(last).exists(), sorted(p.name for p in last.parent.iterdir())
    return last


def test_spark_sidecar_verifies_and_a_delta_rs_checkpoint_breaks_it(
    spark: Any, tmp_path: Path
) -> None:
    last = _checkpointed_by_spark(spark, tmp_path / "t")
    crc = checksum.sidecar(last)
    # Hadoop's own sidecar, as this module reads it.
    assert checksum.verifies(last.read_bytes(), crc.read_bytes())
    assert checksum.forget_stale(tmp_path / "t") is False and crc.exists()

    before = last.read_bytes()
    for n in range(2):  # delta-rs checkpoints at the table's interval too
        one = pa.table({"n": pa.array([n], pa.int64())})
        write_deltalake(str(tmp_path / "t"), one, mode="append")
    assert last.read_bytes() != before, "delta-rs wrote no checkpoint"
    from py4j.protocol import Py4JJavaError

    with pytest.raises(Py4JJavaError, match="ChecksumException"):
        _hadoop_read(spark, last)

    assert checksum.forget_stale(tmp_path / "t") is True
    assert not crc.exists()
    assert _hadoop_read(spark, last) == last.read_bytes()
    assert checksum.forget_stale(f"file://{tmp_path / 't'}") is False  # nothing left to remove
    assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 8


def test_the_jobs_delta_rs_writes_leave_no_stale_sidecar(spark: Any, tmp_path: Path) -> None:
    """``deltawrite.append_once`` on a table of the job's that Spark checkpointed: each commit
    leaves ``_last_checkpoint`` readable by Spark's file system."""
    table = tables.QUARANTINE
    path = tmp_path / table.name
    schema = deltaread.schema(table.name)
    row = pa.Table.from_pylist([{}], schema=schema)  # every column is nullable
    frame = spark.createDataFrame(row.to_pandas(), schema=table.ddl)
    frame.write.format("delta").option("delta.checkpointInterval", "1").save(str(path))
    frame.write.format("delta").mode("append").save(str(path))
    last = path / "_delta_log" / "_last_checkpoint"
    assert checksum.sidecar(last).exists()
    spark_wrote = last.read_bytes()

    for batch in range(2):
        assert deltawrite.append_once(path, table, row, APP, batch)
        _hadoop_read(spark, last)  # no ChecksumException
    assert last.read_bytes() != spark_wrote, "delta-rs wrote no checkpoint"
    assert not checksum.sidecar(last).exists()
    assert spark.read.format("delta").load(str(path)).count() == 4
