"""Before the query starts: do the bootstrap servers answer, and does the topic exist?

Spark's Kafka source never gives up on servers that do not answer: the query just waits, and
the client logs a reconnect warning several times a second. So the job asks first, with
Kafka's own Admin client in the driver's JVM and exactly the ``kafka.*`` options the source
gets (security, SASL, SSL), and stops with one line naming the key to fix.

The Kafka client's own log lines are quiet by default (``quiet_kafka_client``): they repeat
for as long as a broker is away, and ``groupwatch.job.source_wait`` says it once per interval.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from groupwatch.bootstrap import BootstrapError
from groupwatch.config import Config
from groupwatch.errors import GroupwatchError
from groupwatch.spark.pipelines import kafka_source_options
from groupwatch.spark.session import driver_jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")


class SourceUnreachable(GroupwatchError, RuntimeError):
    """The source cannot be used as configured; the message names the key to fix."""


def quiet_kafka_client(spark: SparkSession, *, verbose: bool) -> None:
    """The driver's Kafka clients (the source's offset reader, the check below) log only errors
    unless ``verbose``; with it they log as Spark's level allows."""
    jvm = driver_jvm(spark)
    level = jvm.org.apache.logging.log4j.Level.getLevel("WARN" if verbose else "ERROR")
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("org.apache.kafka", level)


def java_cause(exc: Exception) -> str:
    """The innermost Java message of a Py4J error, one line."""
    java = getattr(exc, "java_exception", None)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    while java is not None:
        text = f"{java.getClass().getSimpleName()}: {java.getMessage()}"
        java = java.getCause()
    return text


def admin_properties(
    spark: SparkSession, options: Mapping[str, str], client_id: str, timeout_seconds: int
) -> Any:
    """``java.util.Properties`` for Kafka's Admin client in the driver's JVM: every ``kafka.*``
    option the source gets (servers, security, SASL, SSL), with ``client_id`` and timeouts."""
    jvm = driver_jvm(spark)
    props = jvm.java.util.Properties()
    for key, value in options.items():
        if key.startswith("kafka."):
            props.setProperty(key.removeprefix("kafka."), value)
    millis = str(timeout_seconds * 1000)
    props.setProperty("client.id", client_id)
    props.setProperty("request.timeout.ms", millis)
    props.setProperty("default.api.timeout.ms", millis)
    return props


def check_source(spark: SparkSession, config: Config) -> None:
    """Raise :class:`SourceUnreachable` unless the servers answer within
    ``source.check_timeout_seconds`` and list ``source.topic``."""
    timeout = config.source.check_timeout_seconds
    if timeout <= 0:
        return
    try:
        options = kafka_source_options(config)
    except (BootstrapError, ValueError) as exc:
        raise SourceUnreachable(str(exc)) from None
    bootstrap = options["kafka.bootstrap.servers"]
    jvm = driver_jvm(spark)
    props = admin_properties(spark, options, "groupwatch-check", timeout)
    admin_pkg = jvm.org.apache.kafka.clients.admin
    log.info("checking that %s answers and has %s", bootstrap, config.source.topic)
    admin = None
    try:
        admin = admin_pkg.Admin.create(props)
        listing = admin_pkg.ListTopicsOptions().listInternal(True).timeoutMs(timeout * 1000)
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        names = set(admin.listTopics(listing).names().get(timeout + 5, unit))
    except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
        raise SourceUnreachable(
            f"source.bootstrap_servers: no answer from {bootstrap} within {timeout} s "
            f"({java_cause(exc)}); source.check_timeout_seconds sets the wait"
        ) from None
    finally:
        if admin is not None:
            admin.close(jvm.java.time.Duration.ofSeconds(2))
    # Spark's `subscribe` takes a comma-separated list (the demo reads two topics).
    wanted = [t.strip() for t in config.source.topic.split(",") if t.strip()]
    missing = [t for t in wanted if t not in names]
    if missing:
        raise SourceUnreachable(
            f"source.topic: {bootstrap} has no topic {', '.join(map(repr, missing))}"
            + (
                " (Kafka creates it when the first consumer group commits or joins)"
                if "__consumer_offsets" in missing
                else ""
            )
        )
