"""The tests' shared SparkSession pointed at the S3 server as the job's session would be."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from groupwatch import config, storage
from groupwatch.spark.session import base_settings
from tests.s3.server import S3Server


def hadoop_on_s3(spark: Any, s3: S3Server, bucket: str, *extra: str) -> Iterator[config.Config]:
    """The configuration of a job under ``s3a://<bucket>/groupwatch``, and the shared session's
    Hadoop configuration given what the job's own session gets from [storage] (restored
    after)."""
    s3.make_bucket(bucket)
    cfg = config.load(
        None,
        env=s3.env(),
        overrides=[*s3.overrides(f"s3a://{bucket}/groupwatch"), *extra],
    )
    saved_env = {k: os.environ.get(k) for k in s3.env()}
    os.environ.update(s3.env())  # the AWS chain's variables, as the job's process has them
    settings = base_settings(cfg, local=False)
    assert settings == {**settings, **storage.spark_conf(cfg.storage, s3.env())}
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    saved = {}
    for key, value in settings.items():
        if key.startswith("spark.hadoop."):
            name = key[len("spark.hadoop.") :]
            saved[name] = hadoop.get(name)
            hadoop.set(name, value)
    yield cfg
    for name, env_value in saved_env.items():
        if env_value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = env_value
    for name, value in saved.items():
        if value is None:
            hadoop.unset(name)
        else:
            hadoop.set(name, value)
