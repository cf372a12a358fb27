"""Building the SparkSession: local jars only, Delta wired in by hand.

``configure_spark_with_delta_pip`` would set ``spark.jars.packages``, which makes Spark resolve
artifacts through Ivy when the JVM starts, i.e. download at run time.  Instead scripts/setup
fetches the jars once and a local session is handed the files with ``spark.jars``.

Under ``spark-submit`` (or any launcher that started the JVM first, such as a Databricks job)
the submitter owns the classpath and the cluster settings: the jars come from ``--jars``, the
driver's address from the cluster, and the job only adds the settings nobody submitted.  It
never looks for files next to the installed package, which on a cluster node do not exist.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from groupwatch import paths, storage
from groupwatch.config import Config
from groupwatch.errors import GroupwatchError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkSetupError(GroupwatchError, RuntimeError):
    """The Spark session cannot be built (missing jars, bad settings)."""


#: A class from each jar the job cannot run without, and the jar's name.
REQUIRED_CLASSES = {
    "org.apache.spark.sql.kafka010.KafkaSourceProvider": "spark-sql-kafka-0-10",
    "io.delta.sql.DeltaSparkSessionExtension": "delta-spark_",
}
#: Only for a session this process starts itself: on a cluster they would be wrong.
_LOCAL_ONLY = ("spark.jars", "spark.driver.host", "spark.driver.bindAddress")


def spark_jars() -> list[str]:
    """The connector and Delta jars that scripts/setup put in ``.groupwatch/jars/spark``."""
    folder = paths.jars_dir("spark")
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    names = " ".join(os.path.basename(j) for j in jars)
    for required in REQUIRED_CLASSES.values():
        if required not in names:
            raise SparkSetupError(
                f"{required}*.jar is missing from {folder}; run scripts/setup (or set "
                "GROUPWATCH_HOME to the folder holding jars/spark; under spark-submit, pass "
                "the jars with --jars)"
            )
    return jars


def launched_by_submitter() -> bool:
    """Whether the JVM was started before Python (spark-submit, a notebook or job runtime)."""
    from pyspark import SparkContext

    return "PYSPARK_GATEWAY_PORT" in os.environ or SparkContext._active_spark_context is not None


def base_settings(config: Config, *, local: bool = True) -> dict[str, str]:
    """Every Spark setting the job needs, as plain strings; ``local=False`` leaves out what only
    a session of this process's own may set (jars, driver address)."""
    settings = {
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
        # Arrow carries batches between the JVM and the Python decoder.
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        # Delta rebuilds a table's snapshot after every commit with this many shuffle tasks
        # (default 50). The job's tables keep short logs (a checkpoint every 10 commits), and
        # 50 tasks per commit made each MERGE cost ~4 s instead of ~1 s on two cores.
        "spark.databricks.delta.snapshotPartitions": "2",
        # Generated code is cached by its source, 100 classes by default: a batch that runs
        # its Python stage in the workers plans more distinct operators than that, so every
        # batch compiled them all again (70-100 compilations per 10 s of a live stream,
        # 5-90 ms each, measured from CodeGenerator's log: bench/HISTORY.md, "A small batch
        # on the driver").
        "spark.sql.codegen.cache.maxEntries": "1000",
        # Spark masks option values whose names match this in plans, logs and the UI;
        # Kafka's JAAS line carries a password under a name without "password" in it.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas|keystore|truststore",
    }
    if storage.is_s3(config.delta.root) or storage.is_s3(config.checkpoint.root):
        # hadoop-aws (s3a://) addressed as [storage] says, credentials from the AWS chain.
        settings.update(storage.spark_conf(config.storage, os.environ))
    if local:
        if "spark.jars" not in config.spark.conf:
            settings["spark.jars"] = ",".join(spark_jars())
        # A session of our own stays on loopback.
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(config.spark.conf)
    return settings


def _submitted_keys() -> set[str]:
    """The settings spark-submit already gave the JVM (they win over the job's own)."""
    from pyspark import SparkConf, SparkContext

    # Connects to the submitter's JVM, so that SparkConf() sees its settings.
    SparkContext._ensure_initialized()
    return {key for key, _ in SparkConf().getAll()}


def build_session(config: Config) -> SparkSession:
    """A SparkSession for the job; under spark-submit the submitted settings win."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(config.job.app_name)
    if launched_by_submitter():
        given = _submitted_keys()
        settings = {k: v for k, v in base_settings(config, local=False).items() if k not in given}
    else:
        # Python workers must run the interpreter that has groupwatch installed, not whatever
        # python3 is first on PATH; PySpark reads this when the context starts. (A cluster's
        # workers have their own Python: spark.pyspark.python at submit time.)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(config.spark.master)
        settings = base_settings(config)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("GROUPWATCH_SPARK_LOG_LEVEL", "WARN"))
    missing = missing_jars(spark)
    if missing:
        spark.stop()
        raise SparkSetupError(
            f"{', '.join(missing)} not on the driver's classpath: pass the jars scripts/setup "
            "fetched (.groupwatch/jars/spark/*.jar) with spark-submit --jars"
        )
    return spark


def missing_jars(spark: SparkSession) -> list[str]:
    """The required jars whose classes the driver cannot load."""
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    jvm = driver_jvm(spark)
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    missing = []
    for name, jar in REQUIRED_CLASSES.items():
        try:
            jvm.java.lang.Class.forName(name, False, loader)
        except Py4JJavaError:
            missing.append(f"{jar}*.jar")
    return missing


def driver_jvm(spark: SparkSession) -> Any:
    """The driver's JVM as Py4J sees it (untyped: its packages are looked up by name)."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise SparkSetupError("the Spark session has no JVM: its context was stopped")
    return jvm
