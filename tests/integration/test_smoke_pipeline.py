"""Real broker -> real consumer groups -> Spark's Kafka source on __consumer_offsets -> Delta."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import config
from groupwatch.spark.pipelines import RAW_TABLE, build_raw_copy
from groupwatch_dev.demo.traffic import create_topic, produce, scale_out_group

pytestmark = [pytest.mark.broker, pytest.mark.spark]

GROUP_METADATA = bytes([0, 2])
OFFSET_COMMIT = bytes([0, 1])


@pytest.fixture(scope="module")
def groups(broker: str) -> str:
    """Two real groups that join, rebalance (scale out to 2 and 3 members) and commit."""
    create_topic(broker, "orders", 6)
    produce(broker, "orders", [(None, b"order-%d" % i) for i in range(60)])
    seen = scale_out_group(broker, "smoke-orders", "orders", partitions=6, size=2, consume=60)
    seen += scale_out_group(broker, "smoke-billing", "orders", partitions=6, size=3, consume=60)
    assert seen >= 60
    return broker


def job_config(broker: str, root: Path, topic: str, *extra: str) -> config.Config:
    return config.load(
        None,
        env={},
        overrides=[
            f"source.bootstrap_servers={broker}",
            f"source.topic={topic}",
            f"delta.root={root / 'delta'}",
            f"checkpoint.root={root / 'checkpoints'}",
            *extra,
        ],
    )


def copy_once(spark, cfg: config.Config):  # type: ignore[no-untyped-def]
    build_raw_copy(spark, cfg, once=True).start().awaitTermination(300)
    return spark.read.format("delta").load(cfg.table_path(RAW_TABLE))


def group_of(key: bytes) -> str:
    # GroupMetadataKey / OffsetCommitKey: int16 type, then the group as an int16-length string.
    n = int.from_bytes(key[2:4], "big")
    return key[4 : 4 + n].decode()


def test_internal_topic_reaches_delta(spark, groups: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    table = copy_once(spark, job_config(groups, tmp_path, "__consumer_offsets"))
    rows = table.collect()
    assert set(table.columns) >= {"key", "value", "topic", "partition", "offset", "timestamp"}
    metadata = [r for r in rows if bytes(r.key)[:2] == GROUP_METADATA]
    commits = [r for r in rows if bytes(r.key)[:2] == OFFSET_COMMIT]
    assert metadata, "no group-metadata record (key type 2) arrived from __consumer_offsets"
    assert commits, "no offset-commit record arrived from __consumer_offsets"
    assert {group_of(bytes(r.key)) for r in metadata} >= {"smoke-orders", "smoke-billing"}
    # Every rebalance wrote a new snapshot: scale-outs to 2 and 3 members give several each.
    per_group = [group_of(bytes(r.key)) for r in metadata]
    assert per_group.count("smoke-billing") >= 3
    assert all(r.topic == "__consumer_offsets" for r in rows)


def test_restart_continues_from_checkpoint(spark, groups: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = job_config(groups, tmp_path, "__consumer_offsets")
    first = copy_once(spark, cfg).count()
    scale_out_group(groups, "smoke-late", "orders", partitions=6, size=1)
    table = copy_once(spark, cfg)
    rows = table.collect()
    assert len(rows) > first
    # No record was copied twice across the two runs.
    positions = [(r.partition, r.offset) for r in rows]
    assert len(positions) == len(set(positions))
    assert "smoke-late" in {
        group_of(bytes(r.key)) for r in rows if bytes(r.key)[:2] == GROUP_METADATA
    }


def _order(record: tuple[bytes, bytes | None]) -> tuple[bytes, bool, bytes]:
    key, value = record
    return key, value is not None, value or b""


def test_mirror_topic_reads_the_same_records(spark, groups: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    original = copy_once(spark, job_config(groups, tmp_path / "a", "__consumer_offsets")).collect()
    records = [(bytes(r.key), None if r.value is None else bytes(r.value)) for r in original]
    create_topic(groups, "offsets-mirror", 3)
    produce(groups, "offsets-mirror", records)
    mirrored = copy_once(spark, job_config(groups, tmp_path / "b", "offsets-mirror")).collect()
    got = [(bytes(r.key), None if r.value is None else bytes(r.value)) for r in mirrored]
    # Tombstones (value None) are records too: deleted groups, expired offsets.
    assert sorted(got, key=_order) == sorted(records, key=_order)
    assert {r.topic for r in mirrored} == {"offsets-mirror"}


def test_default_offset_reader_misses_internal_topics(spark, groups: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Why the session sets useDeprecatedOffsetFetching: without it the stream reads nothing."""
    key = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
    spark.conf.set(key, "false")
    try:
        # __consumer_offsets alone: the share state topic the job also reads does not exist on
        # this broker, and the admin reader fails the query on a missing topic instead of
        # reading nothing, which is not what this test shows.
        cfg = job_config(groups, tmp_path, "__consumer_offsets", "source.share_state_topic=")
        query = build_raw_copy(spark, cfg, once=True).start()
        query.awaitTermination(300)
        assert sum(p["numInputRows"] for p in query.recentProgress) == 0
        # Not even an empty table: the source found no partition to read.
        assert not Path(cfg.table_path(RAW_TABLE), "_delta_log").exists()
    finally:
        spark.conf.set(key, "true")


def test_no_jar_is_resolved_through_ivy(spark, spark_workdir: Path) -> None:  # type: ignore[no-untyped-def]
    conf = spark.sparkContext.getConf()
    assert not conf.get("spark.jars.packages", "")
    ivy = spark_workdir / "ivy"
    assert not ivy.exists() or not any(ivy.rglob("*.jar")), "Spark resolved jars through Ivy"
    jars = conf.get("spark.jars")
    assert "spark-sql-kafka-0-10" in jars and "delta-spark_4.1" in jars
    # The jars are local files of ours, not a resolver's cache.
    assert all("/.groupwatch/jars/spark/" in j for j in jars.split(","))
