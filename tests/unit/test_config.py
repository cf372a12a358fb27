from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import config


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_defaults_without_file(tmp_path: Path) -> None:
    cfg = config.load(None, env={})
    assert cfg.source.topic == "__consumer_offsets"
    assert cfg.source.bootstrap_servers == "local"
    assert cfg.table_path("findings") == str(Path(".groupwatch/delta/findings").resolve())


def test_shipped_local_conf_loads() -> None:
    root = Path(__file__).resolve().parents[2]
    cfg = config.load(root / "conf" / "local.toml", env={})
    assert cfg.delta.root == ".groupwatch/delta"
    assert cfg.checkpoint.root == ".groupwatch/checkpoints"


def test_precedence_file_env_set(tmp_path: Path) -> None:
    path = write(tmp_path, '[source]\ntopic = "from-file"\nbootstrap_servers = "h:1"\n')
    cfg = config.load(path, env={"GROUPWATCH_SOURCE_TOPIC": "from-env"})
    assert (cfg.source.topic, cfg.source.bootstrap_servers) == ("from-env", "h:1")
    cfg = config.load(
        path, env={"GROUPWATCH_SOURCE_TOPIC": "from-env"}, overrides=["source.topic=from-set"]
    )
    assert cfg.source.topic == "from-set"


def test_typed_overrides() -> None:
    cfg = config.load(
        None,
        env={"GROUPWATCH_SOURCE_FAIL_ON_DATA_LOSS": "true"},
        overrides=[
            "source.max_offsets_per_trigger=500",
            'source.options={"security.protocol": "SSL"}',
        ],
    )
    assert cfg.source.fail_on_data_loss is True
    assert cfg.source.max_offsets_per_trigger == 500
    assert cfg.source.options == {"security.protocol": "SSL"}


@pytest.mark.parametrize(
    ("text", "env", "overrides", "message"),
    [
        ("[source]\ntopik = 'x'\n", {}, [], "unknown key source.topik"),
        ("[sourse]\ntopic = 'x'\n", {}, [], "unknown section 'sourse'"),
        (
            "",
            {"GROUPWATCH_DELTA_ROOTS": "x"},
            [],
            "GROUPWATCH_DELTA_ROOTS: unknown key delta.roots",
        ),
        ("", {}, ["checkpoint.dir=x"], "unknown key checkpoint.dir"),
        ("", {}, ["source.topic"], "expected section.key=value"),
        ("", {}, ["source.max_offsets_per_trigger=lots"], "expected an integer"),
        ("[source]\nmax_offsets_per_trigger = '5'\n", {}, [], "expected an integer"),
        ("[source]\nfail_on_data_loss = 1\n", {}, [], "expected true or false"),
        ("[source\n", {}, [], "not valid TOML"),
    ],
)
def test_bad_configuration_is_a_clear_error(
    tmp_path: Path, text: str, env: dict[str, str], overrides: list[str], message: str
) -> None:
    with pytest.raises(config.ConfigError, match=message):
        config.load(write(tmp_path, text), env=env, overrides=overrides)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="does not exist"):
        config.load(tmp_path / "nope.toml", env={})


def test_unrelated_groupwatch_env_is_ignored() -> None:
    cfg = config.load(None, env={"GROUPWATCH_HOME": "/x"})
    assert cfg.source.topic == "__consumer_offsets"


def test_secrets_are_masked() -> None:
    cfg = config.load(
        None,
        env={},
        overrides=[
            'source.options={"sasl.jaas.config": "PlainLoginModule password=hunter2",'
            ' "security.protocol": "SASL_SSL"}'
        ],
    )
    shown = config.to_dict(cfg)["source"]["options"]
    assert shown == {"sasl.jaas.config": "***", "security.protocol": "SASL_SSL"}
    assert "hunter2" not in repr(config.to_dict(cfg))


def test_detect_section_reaches_the_engine() -> None:
    cfg = config.load(
        None,
        env={"GROUPWATCH_DETECT_STORM_GENERATIONS": "7"},
        overrides=['detect.partitions={"orders": 12}', "detect.cooperative_protocols=a, b"],
    )
    detector = cfg.detect.detector()
    assert detector.storm_generations == 7
    assert detector.partitions_per_topic == {"orders": 12}
    assert detector.cooperative_protocols == ("a", "b")


def test_every_engine_threshold_has_a_detect_key_that_reaches_it() -> None:
    """``[detect]`` maps onto the engine's configuration key by key: every engine field but
    those no key sets is some key's, the defaults agree, and each key's value (every key set
    to a value of its own) lands in its field, in the engine's unit."""
    import dataclasses

    from groupwatch.detect.config import DetectorConfig

    engine = {f.name for f in dataclasses.fields(DetectorConfig)}
    keys = [f for f in dataclasses.fields(config.DetectSection) if "engine" in f.metadata]
    special = {"cooperative_protocols", "broker_version", "partitions_per_topic"}
    special |= {"partitions_as_of_ms"}
    mapped = {f.metadata["engine"] for f in keys}
    assert len(mapped) == len(keys)  # no two keys set one field
    assert engine - mapped - special == config.ENGINE_ONLY
    assert not (mapped | special) & config.ENGINE_ONLY
    assert config.DetectSection().detector(now_ms=0) == DetectorConfig()
    overrides = [f"detect.{f.name}={31 + i}" for i, f in enumerate(keys)]
    detector = config.load(None, env={}, overrides=overrides).detect.detector(now_ms=0)
    for i, f in enumerate(keys):
        assert getattr(detector, f.metadata["engine"]) == (31 + i) * f.metadata["per"], f.name
        # The file counts seconds where the engine counts milliseconds, and says so.
        seconds = f.name.endswith("_seconds")
        assert seconds == f.metadata["engine"].endswith("_ms"), f.name
        assert f.metadata["per"] == (1000 if seconds else 1), f.name


def test_detect_section_rejects_bad_values() -> None:
    cfg = config.load(None, env={}, overrides=['detect.partitions={"orders": "many"}'])
    with pytest.raises(config.ConfigError, match="detect.partitions"):
        cfg.detect.detector()
    with pytest.raises(config.ConfigError, match=r"\[detect\]"):
        config.load(None, env={}, overrides=["detect.churn_generations=1"]).detect.detector()


def test_table_values_merge_across_layers(tmp_path: Path) -> None:
    path = write(tmp_path, '[source.options]\n"security.protocol" = "SASL_SSL"\n')
    cfg = config.load(
        path, env={"GROUPWATCH_SOURCE_OPTIONS": '{"sasl.jaas.config": "x password=y;"}'}
    )
    assert cfg.source.options == {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": "x password=y;",
    }


def test_the_readers_fetch_wait_is_short_unless_the_source_options_set_it() -> None:
    from groupwatch.spark.pipelines import reader_options

    default = config.load(None, env={}, overrides=["source.bootstrap_servers=h:9092"])
    assert reader_options(default)["kafka.fetch.max.wait.ms"] == "10"
    given = config.load(
        None,
        env={},
        overrides=[
            "source.bootstrap_servers=h:9092",
            'source.options={"fetch.max.wait.ms": "250"}',
        ],
    )
    assert reader_options(given)["kafka.fetch.max.wait.ms"] == "250"


def test_lag_section_reaches_the_rules() -> None:
    root = Path(__file__).resolve().parents[2]
    shipped = config.load(root / "conf" / "local.toml", env={})
    assert shipped.lag == config.LagConfig()  # the file and the defaults say the same
    cfg = config.load(
        None, env={"GROUPWATCH_LAG_STOP_SECONDS": "60"}, overrides=["lag.warn_seconds=30"]
    )
    rules = cfg.lag.rules()
    assert (rules.stop_ms, rules.warn_ms, rules.poll_ms) == (60_000, 30_000, 15_000)
    with pytest.raises(config.ConfigError, match="lag.poll_seconds"):
        config.load(None, env={}, overrides=["lag.poll_seconds=0"]).lag.rules()
