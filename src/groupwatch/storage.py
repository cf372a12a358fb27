"""Object stores under ``delta.root``: what delta-rs and Spark are told, from ``[storage]``.

One place turns the ``[storage]`` section into each library's settings, so the job's two
writers, the dashboard, the notifier and ``groupwatch lag`` all address the same bucket the
same way.  Credentials are never read here: delta-rs and hadoop-aws each follow the standard
AWS chain (environment, profile, instance role) themselves.

``s3a://`` (Hadoop's scheme) and ``s3://`` name the same place: delta-rs is given ``s3://``,
Spark ``s3a://`` (on a cluster whose ``s3://`` is another file system, EMR's, both reach the
same objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlparse

from groupwatch.config import StorageConfig

#: Schemes of Amazon S3 (and S3-compatible servers) as users write them.
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})


def scheme(location: str) -> str:
    """The URI scheme of a location, lower case ("" for a plain path)."""
    if "://" not in location:
        return ""
    return urlparse(location).scheme.lower()


def is_s3(location: str) -> bool:
    return scheme(location) in S3_SCHEMES


def bucket(location: str) -> str:
    """The bucket (or container) of an object-store location."""
    return urlparse(location).netloc


def for_delta_rs(location: str) -> str:
    """The location as delta-rs names it: ``s3a://`` and ``s3n://`` are its ``s3://``."""
    if is_s3(location):
        return "s3://" + location.split("://", 1)[1]
    return location


def for_spark(location: str) -> str:
    """The location as Spark's Hadoop names it: ``s3://`` is hadoop-aws's ``s3a://``."""
    if is_s3(location):
        return "s3a://" + location.split("://", 1)[1]
    return location


def delta_rs_options(storage: StorageConfig, location: str) -> dict[str, str]:
    """delta-rs's ``storage_options`` for a table at ``location`` (empty for a local one).

    Commits on S3 go through conditional puts (``If-None-Match: *`` on the commit file): a
    version two writers both try is written by one of them, the other sees the conflict and
    retries on the new version, as on a local file system."""
    if not is_s3(location):
        return dict(storage.options) if scheme(location) not in ("", "file") else {}
    options: dict[str, str] = {"conditional_put": "etag"}
    if storage.endpoint:
        options["AWS_ENDPOINT_URL"] = storage.endpoint
    if storage.region:
        options["AWS_REGION"] = storage.region
    options["AWS_ALLOW_HTTP"] = "true" if storage.allow_http else "false"
    options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if storage.path_style else "true"
    options.update(storage.options)
    return options


def spark_conf(storage: StorageConfig, env: Mapping[str, str]) -> dict[str, str]:
    """``spark.hadoop.fs.s3a.*`` settings for the session, from ``[storage]``.

    The credentials provider chain is hadoop-aws's own default with the environment first:
    a session token in the environment is honoured as well as a plain key pair."""
    conf = {
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        # s3:// on this session is the same store as s3a://.
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.path.style.access": "true" if storage.path_style else "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider": ",".join(
            (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
                if env.get("AWS_SESSION_TOKEN")
                else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
                "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider",
                "software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider",
            )
        ),
    }
    if storage.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = storage.endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = (
            "false" if storage.endpoint.lower().startswith("http://") else "true"
        )
    if storage.region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = storage.region
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        # Simple/Temporary providers read these keys (Spark redacts them in its UI and logs).
        conf["spark.hadoop.fs.s3a.access.key"] = key
        conf["spark.hadoop.fs.s3a.secret.key"] = secret
        if env.get("AWS_SESSION_TOKEN"):
            conf["spark.hadoop.fs.s3a.session.token"] = env["AWS_SESSION_TOKEN"]
    return conf
