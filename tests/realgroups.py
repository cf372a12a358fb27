"""Helpers for tests over real groups on the real broker: a dump of ``__consumer_offsets`` as
``groupwatch analyze`` input lines, and the streaming job run once over the broker's records."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, TopicPartition

from groupwatch import config


def dump_consumer_offsets(bootstrap: str) -> list[dict[str, Any]]:
    """Every record of ``__consumer_offsets`` as a ``groupwatch decode`` input line."""
    return dump_topic(bootstrap, "__consumer_offsets")


def dump_topic(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every record of ``topic`` (an internal one: ``__consumer_offsets``,
    ``__share_group_state``) as a ``groupwatch decode`` input line."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, exclude_internal_topics=False, enable_auto_commit=False
    )
    try:
        parts = [
            TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        lines: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < end[tp] for tp in parts):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    lines.append(
                        {
                            "key": base64.b64encode(r.key).decode(),
                            "value": None
                            if r.value is None
                            else base64.b64encode(r.value).decode(),
                            "topic": tp.topic,
                            "partition": tp.partition,
                            "offset": r.offset,
                            "timestamp": r.timestamp,
                        }
                    )
        lines.sort(key=lambda x: (x["partition"], x["offset"]))
        return lines
    finally:
        consumer.close()


def decode_dumped(line: dict[str, Any]) -> Any:
    """A line of :func:`dump_topic` decoded, as the job decodes the record."""
    from groupwatch.protocol import decode_record

    return decode_record(
        base64.b64decode(line["key"]),
        None if line["value"] is None else base64.b64decode(line["value"]),
        topic=line["topic"],
        partition=line["partition"],
        offset=line["offset"],
        timestamp=line["timestamp"],
    )


def make_config(broker: str, root: Path, *extra: str) -> config.Config:
    """The job on ``broker``, with fresh Delta and checkpoint roots under ``root``."""
    return config.load(
        None,
        env={},
        overrides=[
            f"source.bootstrap_servers={broker}",
            f"delta.root={root / 'delta'}",
            f"checkpoint.root={root / 'checkpoints'}",
            "validation.every_n_batches=1",
            "metrics.port=0",
            *extra,
        ],
    )


def run_once(spark, cfg: config.Config, step_clock=None) -> None:  # type: ignore[no-untyped-def]
    """The job as the configuration sets it up, over everything in the source, once."""
    from groupwatch.spark.query import GroupwatchQuery

    job = GroupwatchQuery.from_config(spark, cfg, step_clock=step_clock)
    job.writer(once=True).start().awaitTermination(600)
    job.close()


def table(spark, cfg: config.Config, name: str):  # type: ignore[no-untyped-def]
    return spark.read.format("delta").load(cfg.table_path(name))
