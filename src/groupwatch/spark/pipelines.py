"""Streaming queries, built from configuration (start them with ``.start()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch.bootstrap import resolve_bootstrap
from groupwatch.config import Config

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

#: Kafka options Spark's source refuses or that the job sets itself.
_RESERVED = {
    "group.id",
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
    "interceptor.classes",
    "bootstrap.servers",
}

#: Consumer settings of the source's readers unless ``source.options`` sets them.
#: ``fetch.max.wait.ms``: a reader that has read its range up to the end of the log has
#: already asked the broker for more (Kafka's consumer fetches ahead), and the broker holds that
#: request until data arrives or this time passes (500 ms by Kafka's default); the next range
#: read with that consumer waits for it first.  With each task reading 25 of
#: ``__consumer_offsets``' 50 partitions in turn, reading 500 records took 13.3 s at 500 ms
#: and 0.9 s at 10 ms (bench/HISTORY.md, "The state from the driver's memory, a short fetch
#: wait, and state read in small batches").
CONSUMER_DEFAULTS = {"kafka.fetch.max.wait.ms": "10"}

RAW_TABLE = "raw_records"
#: Spark's Kafka source names its own consumer groups with this prefix; the job skips them.
READER_GROUP_PREFIX = "groupwatch-reader"


def subscribed(config: Config) -> str:
    """What the source subscribes to: ``source.topic`` (a comma-separated list) and
    ``source.share_state_topic`` when set and not already among them."""
    src = config.source
    topics = [t.strip() for t in src.topic.split(",") if t.strip()]
    share = src.share_state_topic.strip()
    if share and share not in topics:
        topics.append(share)
    return ",".join(topics)


def kafka_source_options(config: Config) -> dict[str, str]:
    """Options for Spark's Kafka source: the topic, offsets and every ``kafka.*`` passthrough."""
    src = config.source
    options = {
        "kafka.bootstrap.servers": resolve_bootstrap(src.bootstrap_servers),
        "subscribe": subscribed(config),
        "startingOffsets": src.starting_offsets,
        "failOnDataLoss": str(src.fail_on_data_loss).lower(),
        # The reader's own group must never look like a group we watch.
        "groupIdPrefix": READER_GROUP_PREFIX,
    }
    if src.max_offsets_per_trigger > 0:
        options["maxOffsetsPerTrigger"] = str(src.max_offsets_per_trigger)
    for key, value in src.options.items():
        name = key.removeprefix("kafka.")
        if name in _RESERVED:
            raise ValueError(
                f"source.options.{key} is set by groupwatch itself or refused by Spark"
            )
        options[f"kafka.{name}"] = value
    return options


def reader_options(config: Config) -> dict[str, str]:
    """The stream reader's options: :func:`kafka_source_options` over ``CONSUMER_DEFAULTS``."""
    return {**CONSUMER_DEFAULTS, **kafka_source_options(config)}


def read_source(spark: SparkSession, config: Config) -> DataFrame:
    """The raw Kafka rows of the configured topic, as a stream."""
    reader = spark.readStream.format("kafka")
    for key, value in reader_options(config).items():
        reader = reader.option(key, value)
    return reader.load()


def build_raw_copy(spark: SparkSession, config: Config, *, once: bool) -> DataStreamWriter:
    """The smoke pipeline: copy key, value and source position of every record into Delta."""
    rows = read_source(spark, config).select(
        "key", "value", "topic", "partition", "offset", "timestamp"
    )
    writer = (
        rows.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", config.checkpoint_path(RAW_TABLE))
        .option("path", config.table_path(RAW_TABLE))
        .queryName(RAW_TABLE)
    )
    if once:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=config.job.trigger_interval)
