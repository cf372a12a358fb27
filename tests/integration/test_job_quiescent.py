"""Which batches are quiescent points: those the rate limit did not cut short.

KIP-848, streams and share groups are judged only where the job has read everything
available.  With ``source.max_offsets_per_trigger`` the job tells from the batch's own Kafka
offset ranges; counting records instead would take a batch cut short for a caught-up one
wherever records are fewer than offsets (compaction in ``__consumer_offsets``; here,
transaction markers, one offset per committed transaction).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from groupwatch import config
from groupwatch_dev.demo.traffic import create_topic

pytestmark = [pytest.mark.broker, pytest.mark.spark]

TOPIC = "quiescent-transactions"
TRANSACTIONS = 60
LIMIT = 50


@pytest.fixture(scope="module")
def transactional_topic(broker: str) -> str:
    """One partition of 60 one-record transactions: offsets 0-119, every other one a marker."""
    create_topic(broker, TOPIC, 1)
    producer = KafkaProducer(bootstrap_servers=broker, transactional_id="quiescent-test")
    try:
        producer.init_transactions()
        for i in range(TRANSACTIONS):
            producer.begin_transaction()
            producer.send(TOPIC, value=b"r%d" % i)
            producer.commit_transaction()
    finally:
        producer.close()
    return TOPIC


def _batches(spark, cfg: config.Config, root: Path) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    from groupwatch.spark.pipelines import read_source
    from groupwatch.spark.query import GroupwatchQuery
    from groupwatch.spark.source import offset_ranges

    job = GroupwatchQuery(spark, cfg, cfg.detect.detector())
    seen: list[dict[str, Any]] = []

    def batch(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        rows = df.count()
        seen.append(
            {
                "records": rows,
                "ranges": offset_ranges(df),
                "caught_up": job._caught_up_check(df, rows, 1),
            }
        )

    query = (
        read_source(spark, cfg)
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    return seen


def _config(broker: str, *extra: str) -> config.Config:
    return config.load(
        None,
        env={},
        overrides=[f"source.bootstrap_servers={broker}", f"source.topic={TOPIC}", *extra],
    )


def test_only_the_batch_that_reaches_the_end_is_caught_up(
    spark, broker: str, transactional_topic: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cfg = _config(broker, f"source.max_offsets_per_trigger={LIMIT}")
    seen = _batches(spark, cfg, tmp_path)
    assert [b["ranges"] for b in seen] == [
        [(TOPIC, 0, 0, 50)],
        [(TOPIC, 0, 50, 100)],
        [(TOPIC, 0, 100, 120)],
    ]
    assert [b["records"] for b in seen] == [25, 25, 10]
    # Half as many records as offsets: the first two batches read far fewer records than the
    # limit, yet the limit cut them short.
    assert [b["caught_up"] for b in seen] == [False, False, True]


def test_without_a_limit_every_batch_is_caught_up(
    spark, broker: str, transactional_topic: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    seen = _batches(spark, _config(broker), tmp_path)
    assert [(b["records"], b["caught_up"]) for b in seen] == [(TRANSACTIONS, True)]
