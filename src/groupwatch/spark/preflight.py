"""Before the query starts: do the bootstrap servers answer, and does the topic exist?

Spark's Kafka source never gives up on servers that do not answer: the query just waits, and
the client logs a reconnect warning several times a second. So the job asks first, with
Kafka's own Admin client in the driver's JVM and exactly the ``kafka.*`` options the source
gets (security, SASL, SSL), and stops with one line naming the key to fix.

The Kafka client's own log lines are quiet by default (``quiet_kafka_client``): they repeat
for as long as a broker is away, and ``groupwatch.job.source_wait`` says it once per interval.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
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


@contextlib.contextmanager
def _silenced(spark: SparkSession, logger: str) -> Iterator[None]:
    """``logger`` off while the block runs, then at its level before: the check reports its
    client's failures itself, in one line."""
    jvm = driver_jvm(spark)
    log4j = jvm.org.apache.logging.log4j
    before = log4j.LogManager.getLogger(logger).getLevel()
    log4j.core.config.Configurator.setLevel(logger, log4j.Level.OFF)
    try:
        yield
    finally:
        log4j.core.config.Configurator.setLevel(logger, before)


def java_cause(exc: Exception) -> str:
    """The innermost Java message of a Py4J error, one line."""
    java = getattr(exc, "java_exception", None)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    while java is not None:
        text = f"{java.getClass().getSimpleName()}: {java.getMessage()}"
        java = java.getCause()
    return text


#: Kafka's exceptions for a client the brokers reached but would not let in (wrong password,
#: unknown mechanism, TLS handshake, ACLs): waiting longer cannot help, so they get their own line.
_REFUSALS = {
    "org.apache.kafka.common.errors.SaslAuthenticationException": "sasl",
    "org.apache.kafka.common.errors.SslAuthenticationException": "ssl",
    "org.apache.kafka.common.errors.AuthenticationException": "auth",
    "org.apache.kafka.common.errors.AuthorizationException": "acl",
}


def refusal(exc: Exception) -> str | None:
    """Which kind of refusal (``sasl``, ``ssl``, ``auth``, ``acl``) a Py4J error carries in its
    Java cause chain, or None for any other failure."""
    java = getattr(exc, "java_exception", None)
    while java is not None:
        cls = java.getClass()
        while cls is not None:
            kind = _REFUSALS.get(cls.getName())
            if kind is not None:
                return kind
            cls = cls.getSuperclass()
        java = java.getCause()
    return None


_REFUSAL_HINTS = {
    "sasl": "the SASL login failed: check sasl.mechanism and the user and password in "
    "source.options' sasl.jaas.config",
    "ssl": "the TLS handshake failed: check ssl.truststore.location (and its password) in "
    "source.options",
    "auth": "the brokers refused the client: check security.protocol, sasl.* and ssl.* in "
    "source.options",
    "acl": "the user lacks a permission the job needs (Describe and Read on source.topic)",
}


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


def _list_topics(jvm: Any, props: Any, bootstrap: str, timeout: int) -> set[str]:
    admin_pkg = jvm.org.apache.kafka.clients.admin
    admin = None
    try:
        admin = admin_pkg.Admin.create(props)
        listing = admin_pkg.ListTopicsOptions().listInternal(True).timeoutMs(timeout * 1000)
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        return set(admin.listTopics(listing).names().get(timeout + 5, unit))
    except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
        kind = refusal(exc)
        if kind is not None:
            raise SourceUnreachable(
                f"source.options: {bootstrap} answered but refused the connection "
                f"({java_cause(exc)}); {_REFUSAL_HINTS[kind]}"
            ) from None
        raise SourceUnreachable(
            f"source.bootstrap_servers: no answer from {bootstrap} within {timeout} s "
            f"({java_cause(exc)}); source.check_timeout_seconds sets the wait"
        ) from None
    finally:
        if admin is not None:
            admin.close(jvm.java.time.Duration.ofSeconds(2))


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
    log.info("checking that %s answers and has %s", bootstrap, config.source.topic)
    # The Admin client logs a refused login at ERROR, once per attempt, before the call fails.
    with _silenced(spark, "org.apache.kafka.clients.NetworkClient"):
        names = _list_topics(jvm, props, bootstrap, timeout)
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
