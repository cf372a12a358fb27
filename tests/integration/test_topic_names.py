"""The driver asks the real broker for topic id -> name with Kafka's Admin client."""

from __future__ import annotations

import re
import time

import pytest

from groupwatch import config
from groupwatch_dev.demo.traffic import create_topic

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def test_the_brokers_name_every_topic_by_id(spark, broker: str) -> None:  # type: ignore[no-untyped-def]
    from groupwatch.spark.topic_names import ask_brokers

    create_topic(broker, "topic-names-a", 2)
    create_topic(broker, "topic-names-b", 1)
    cfg = config.load(None, env={}, overrides=[f"source.bootstrap_servers={broker}"])
    names = ask_brokers(spark, cfg)
    by_name = {name: tid for tid, name in names.items()}
    assert {"topic-names-a", "topic-names-b"} <= set(by_name)
    # Kafka prints a topic id as 16 bytes of URL-safe base64 without padding.
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", tid) for tid in names)
    assert by_name["topic-names-a"] != by_name["topic-names-b"]


def test_servers_that_do_not_answer_fail_within_the_timeout(spark) -> None:  # type: ignore[no-untyped-def]
    from groupwatch.spark.topic_names import ask_brokers

    cfg = config.load(None, env={}, overrides=["source.bootstrap_servers=127.0.0.1:1"])
    started = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017, PT011 - Py4J's one error type
        ask_brokers(spark, cfg, timeout_seconds=2)
    assert time.monotonic() - started < 30
