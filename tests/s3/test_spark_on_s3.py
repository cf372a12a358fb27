"""Spark with hadoop-aws (the jars scripts/setup fetches into .groupwatch/jars/spark) on the
tests' S3 server, addressed as ``[storage]`` says: a Delta table and a streaming query's
checkpoint on ``s3a://``, read back by Spark and by the delta-rs readers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.delta.read import DeltaStore
from tests.s3.server import S3Server
from tests.s3.spark_conf import hadoop_on_s3

pytestmark = [pytest.mark.spark]

BUCKET = "gw-spark"


@pytest.fixture(scope="module")
def on_s3(spark: Any, s3: S3Server) -> Iterator[config.Config]:
    yield from hadoop_on_s3(spark, s3, BUCKET)


def test_a_spark_delta_table_on_s3a_reads_back_in_spark_and_delta_rs(
    spark: Any, on_s3: config.Config, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    path = on_s3.table_path("findings")
    assert path == f"s3a://{BUCKET}/groupwatch/delta/findings"
    rows = [(f"f-{i}", i) for i in range(5)]
    frame = spark.createDataFrame(rows, "finding_id string, generation int")
    frame.write.format("delta").mode("overwrite").save(path)
    frame.limit(2).write.format("delta").mode("append").save(path)
    back = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert back == sorted(rows + rows[:2])
    # The objects are on the server, under the bucket's folder.
    assert (s3.data / BUCKET / "groupwatch/delta/findings/_delta_log").is_dir()
    # delta-rs (the dashboard's reader) reads Spark's table at the same version.
    store = DeltaStore(on_s3.delta.root, on_s3.storage)
    assert store.version("findings") == 1
    read = store.read("findings")
    assert sorted(zip(read["finding_id"], read["generation"], strict=True)) == back


def test_a_streaming_checkpoint_on_s3a_resumes(
    spark: Any, on_s3: config.Config, s3: S3Server, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    target = on_s3.table_path("stream_out")
    checkpoint = on_s3.checkpoint_path("stream_out")

    def run() -> None:
        query = (
            spark.readStream.schema("n long")
            .json(str(source))
            .writeStream.format("delta")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(target)
        )
        query.awaitTermination(120)
        assert query.exception() is None

    (source / "a.json").write_text("\n".join(json.dumps({"n": n}) for n in range(3)))
    run()
    (source / "b.json").write_text("\n".join(json.dumps({"n": n}) for n in range(3, 5)))
    run()  # resumes from the checkpoint on S3: b.json only, a.json not again
    ns = sorted(r.n for r in spark.read.format("delta").load(target).collect())
    assert ns == [0, 1, 2, 3, 4]
    assert (s3.data / BUCKET / "groupwatch/checkpoints/stream_out/offsets").is_dir()
    assert os.listdir(s3.data / BUCKET / "groupwatch/checkpoints/stream_out/commits")
