"""The ``[storage]`` section's contract: its keys, their defaults, the environment and
``--set``, and what delta-rs and Spark are told from it (docs/deploy.md, "Tables on S3")."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import cli, config, storage

ROOT = Path(__file__).resolve().parents[2]


def test_unset_storage_is_the_providers_default() -> None:
    cfg = config.load(ROOT / "conf" / "local.toml", env={})
    assert cfg.storage.endpoint == ""
    assert cfg.storage.region == ""
    assert cfg.storage.path_style is False
    assert cfg.storage.allow_http is False


def test_an_http_endpoint_means_path_style_and_plain_http() -> None:
    cfg = config.load(None, env={}, overrides=["storage.endpoint=http://127.0.0.1:9000"])
    assert (cfg.storage.path_style, cfg.storage.allow_http) == (True, True)
    cfg = config.load(None, env={}, overrides=["storage.endpoint=https://s3.example.com"])
    assert (cfg.storage.path_style, cfg.storage.allow_http) == (True, False)


def test_explicit_booleans_win_over_the_endpoints_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[storage]\nendpoint = "http://h:1"\npath_style = false\n')
    cfg = config.load(path, env={"GROUPWATCH_STORAGE_ALLOW_HTTP": "false"})
    assert (cfg.storage.path_style, cfg.storage.allow_http) == (False, False)
    cfg = config.load(path, env={}, overrides=["storage.path_style=true"])
    assert cfg.storage.path_style is True


def test_region_defaults_to_aws_region_and_the_section_wins() -> None:
    assert config.load(None, env={"AWS_REGION": "eu-west-3"}).storage.region == "eu-west-3"
    cfg = config.load(
        None, env={"AWS_REGION": "eu-west-3", "GROUPWATCH_STORAGE_REGION": "us-east-2"}
    )
    assert cfg.storage.region == "us-east-2"


def test_bad_storage_values_name_the_key() -> None:
    with pytest.raises(config.ConfigError, match="storage.path_style"):
        config.load(None, env={}, overrides=["storage.path_style=sometimes"])
    with pytest.raises(config.ConfigError, match="storage.bucket"):
        config.load(None, env={}, overrides=["storage.bucket=x"])


def test_config_shows_no_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2-env")
    monkeypatch.setenv("GROUPWATCH_STORAGE_OPTIONS", '{"azure_storage_account_key": "hunter2"}')
    assert cli.main(["config", "--set", "storage.endpoint=http://127.0.0.1:9000"]) == 0
    out = capsys.readouterr().out
    assert "[storage]" in out and 'endpoint = "http://127.0.0.1:9000"' in out
    assert "path_style = true" in out and "allow_http = true" in out
    assert "hunter2" not in out and '"azure_storage_account_key": "***"' in out


def test_s3a_and_s3_are_one_place_for_both_libraries() -> None:
    assert storage.for_delta_rs("s3a://b/x/delta") == "s3://b/x/delta"
    assert storage.for_delta_rs("s3://b/x/delta") == "s3://b/x/delta"
    assert storage.for_spark("s3://b/x") == "s3a://b/x"
    assert storage.for_delta_rs("/tmp/x") == "/tmp/x"
    assert storage.bucket("s3a://gw-bucket/a/b") == "gw-bucket"


def test_delta_rs_options_follow_the_section() -> None:
    cfg = config.load(
        None, env={}, overrides=["storage.endpoint=http://127.0.0.1:9000", "storage.region=r1"]
    )
    opts = storage.delta_rs_options(cfg.storage, "s3a://b/t")
    assert opts == {
        "conditional_put": "etag",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_REGION": "r1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }
    assert storage.delta_rs_options(cfg.storage, "/local/t") == {}
    # The provider's default: virtual-hosted addressing over TLS, no endpoint named.
    plain = storage.delta_rs_options(config.load(None, env={}).storage, "s3://b/t")
    assert plain["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "true"
    assert plain["AWS_ALLOW_HTTP"] == "false" and "AWS_ENDPOINT_URL" not in plain


def test_spark_conf_follows_the_section_and_the_environment() -> None:
    cfg = config.load(None, env={}, overrides=["storage.endpoint=http://127.0.0.1:9000"])
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    conf = storage.spark_conf(cfg.storage, env)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "k"
    assert "session.token" not in " ".join(conf)
    assert (
        "TemporaryAWSCredentialsProvider"
        not in conf["spark.hadoop.fs.s3a.aws.credentials.provider"]
    )
    with_token = storage.spark_conf(cfg.storage, {**env, "AWS_SESSION_TOKEN": "t"})
    assert with_token["spark.hadoop.fs.s3a.session.token"] == "t"
    assert with_token["spark.hadoop.fs.s3a.aws.credentials.provider"].startswith(
        "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    )
