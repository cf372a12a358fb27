"""Building the SparkSession: local jars only, Delta wired in by hand.

``configure_spark_with_delta_pip`` would set ``spark.jars.packages``, which makes Spark resolve
artifacts through Ivy when the JVM starts, i.e. download at run time.  Instead scripts/setup
fetches the jars once and the session is handed the files with ``spark.jars``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from groupwatch import paths
from groupwatch.config import Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkSetupError(RuntimeError):
    """The Spark session cannot be built (missing jars, bad settings)."""


def spark_jars() -> list[str]:
    """The connector and Delta jars that scripts/setup put in ``.groupwatch/jars/spark``."""
    folder = paths.jars_dir("spark")
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    names = " ".join(os.path.basename(j) for j in jars)
    for required in ("spark-sql-kafka-0-10", "delta-spark_"):
        if required not in names:
            raise SparkSetupError(f"{required}*.jar is missing from {folder}; run scripts/setup")
    return jars


def base_settings(config: Config) -> dict[str, str]:
    """Every Spark setting the job needs, as plain strings (spark-submit may override master)."""
    settings = {
        "spark.jars": ",".join(spark_jars()),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Spark's default (AdminClient) offset reader drops internal topics when it lists
        # partitions, so subscribe=__consumer_offsets would read nothing, silently. The
        # consumer-based reader has no such filter.
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "true",
        "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
        "spark.ui.enabled": str(config.spark.ui_enabled).lower(),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Local runs stay on loopback; a cluster's spark-submit settings take precedence.
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        # Arrow carries batches between the JVM and the Python decoder.
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        # Delta rebuilds a table's snapshot after every commit with this many shuffle tasks
        # (default 50). The job's tables keep short logs (a checkpoint every 10 commits), and
        # 50 tasks per commit made each MERGE cost ~4 s instead of ~1 s on two cores.
        "spark.databricks.delta.snapshotPartitions": "2",
        # Spark masks option values whose names match this in plans, logs and the UI;
        # Kafka's JAAS line carries a password under a name without "password" in it.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas|keystore|truststore",
    }
    settings.update(config.spark.conf)
    return settings


def build_session(config: Config) -> SparkSession:
    """A SparkSession for the job; under spark-submit the submitted master wins."""
    from pyspark.sql import SparkSession

    # Python workers must run the interpreter that has groupwatch installed, not whatever
    # python3 is first on PATH; PySpark reads this when the context starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(config.job.app_name)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Started by python, not by spark-submit: nobody chose a master yet.
        builder = builder.master(config.spark.master)
    for key, value in base_settings(config).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("GROUPWATCH_SPARK_LOG_LEVEL", "WARN"))
    return spark
