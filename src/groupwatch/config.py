"""Configuration: frozen dataclasses loaded from TOML, then environment, then ``--set``.

Precedence, lowest first: the dataclass defaults, the TOML file (``conf/local.toml`` unless
``--conf`` names another), environment variables ``GROUPWATCH_<SECTION>_<KEY>`` and finally
``--set section.key=value`` on the command line.  Every key is known in advance: a typo in any
of the three places is an error that names the key and the keys that would have been valid,
because a silently ignored setting is how a monitor ends up watching the wrong cluster.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groupwatch import locations
from groupwatch.detect import partitions
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.lag.judge import LagRules
from groupwatch.errors import GroupwatchError

ENV_PREFIX = "GROUPWATCH_"
DEFAULT_CONF = Path("conf") / "local.toml"


class ConfigError(GroupwatchError, ValueError):
    """The configuration cannot be used as given; the message says which key and why."""


@dataclass(frozen=True)
class SourceConfig:
    """Where the records come from: Spark's Kafka source."""

    #: ``host:port,...``; ``local`` means the project's own broker (``groupwatch broker start``).
    bootstrap_servers: str = "local"
    #: ``__consumer_offsets`` itself, or an ordinary topic that mirrors it (each group's records
    #: in one partition, as there: a batch aggregates a group's commits in the task that
    #: reads them).
    topic: str = "__consumer_offsets"
    #: The share coordinator's topic (KIP-932 share groups' progress), read beside ``topic``
    #: by the same source; ``__share_group_state`` itself or a topic mirroring it (each share
    #: partition's records in one partition, in order).  Empty: not read.  A topic that does
    #: not exist yet (no share group ever ran) is read once it appears.
    share_state_topic: str = "__share_group_state"
    #: Only for a new query; a restarted query continues from its checkpoint.
    starting_offsets: str = "earliest"
    #: 0 means no limit.
    max_offsets_per_trigger: int = 0
    #: ``__consumer_offsets`` is compacted and its old segments are deleted: offset gaps and
    #: vanished offsets are normal there, so losing them must not stop the job.
    fail_on_data_loss: bool = False
    #: Extra Kafka client settings, passed as ``kafka.<name>`` (security.protocol, sasl.*, ...).
    options: Mapping[str, str] = field(default_factory=dict)
    #: Before the query starts, how long the bootstrap servers have to answer and show the
    #: topic (0 = no check).
    check_timeout_seconds: int = 30
    #: While Spark waits for Kafka's offsets (a broker lost), one warning per this many seconds.
    wait_log_seconds: int = 30
    #: How often the job asks the brokers' Admin API for topic id -> name (KIP-848 and share
    #: groups' records name topics by id only); 0 = never ask.
    topic_names_refresh_seconds: int = 300


@dataclass(frozen=True)
class DeltaConfig:
    """Where the Delta tables live: one folder per table under ``root``."""

    root: str = ".groupwatch/delta"
    #: A batch's writes of up to this many rows in all go through the driver with delta-rs
    #: (milliseconds per commit instead of Spark's seconds); larger batches, and tables not on
    #: a local or shared file system, are written by Spark.  0 = always Spark.
    driver_write_rows: int = 200_000


@dataclass(frozen=True)
class CheckpointConfig:
    """Where streaming queries keep their progress: one folder per query under ``root``."""

    root: str = ".groupwatch/checkpoints"


@dataclass(frozen=True)
class StorageConfig:
    """The object store under ``delta.root`` and ``checkpoint.root`` (``docs/deploy.md``).

    Credentials are never keys here: Spark (hadoop-aws) and delta-rs alike take them from the
    standard AWS chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
    a profile, an instance role), so no configuration file holds a secret."""

    #: URL of the S3 API (``http://127.0.0.1:9000``); "" = the provider's default.
    endpoint: str = ""
    #: "" = ``AWS_REGION`` of the environment (then the provider's default).
    region: str = ""
    #: Path-style addressing (``endpoint/bucket/key``); unset = true when an endpoint is set.
    path_style: bool | None = field(default=None, metadata={"kind": bool})
    #: Plain HTTP to the endpoint; unset = true only when the endpoint starts with ``http://``.
    allow_http: bool | None = field(default=None, metadata={"kind": bool})
    #: Further delta-rs storage options, verbatim (``conditional_put``, Azure's or GCS's keys).
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Unset booleans take the contract's defaults, so every reader sees plain values.
        if self.path_style is None:
            object.__setattr__(self, "path_style", bool(self.endpoint))
        if self.allow_http is None:
            object.__setattr__(self, "allow_http", self.endpoint.lower().startswith("http://"))


@dataclass(frozen=True)
class JobConfig:
    """How the streaming job runs."""

    app_name: str = "groupwatch"
    trigger_interval: str = "5 seconds"
    #: Every N-th micro-batch, drop superseded state versions and the state of deleted and
    #: silent groups (0 = never; the state table then grows by one row per group per batch).
    state_maintenance_every_n_batches: int = 20
    #: A group with no record at all (metadata or offset commit) for this many hours of stream
    #: time loses its analysis state (0 = never).
    expire_idle_groups_hours: int = 168
    #: The driver keeps every group's newest analysis state in memory, up to this many MB, so a
    #: batch reads its groups' state without scanning ``group_state``.  Each group's key, times
    #: and timer (about 200 bytes a group) are always held; over the limit the texts written
    #: longest ago are dropped, and a batch reads those it asks for from ``group_state`` by key
    #: (0 = no text held: every batch reads its groups' texts by key).
    state_cache_mb: int = 1024
    #: A batch of up to this many rows has its offset commits aggregated on the driver, and,
    #: when the driver's cache holds its groups' state, runs its Python stage there too, with
    #: no Spark job but the ones that collect its rows (docs/job.md, "The Python stage of a
    #: small batch"); larger ones in Spark and the Python workers. Needs the tables on a file
    #: system the driver sees. 0 = always in Spark. 100,000: five seconds of 4,000 commits/s
    #: and more stay on the driver, where a batch of them takes the Spark path's third
    #: (bench/HISTORY.md, "Open intervals bucketed by group; committed offsets folded before
    #: each poll").
    driver_stage_rows: int = 100_000


@dataclass(frozen=True)
class UpkeepConfig:
    """Table upkeep the job does itself, between batches (``docs/job.md``, "Table upkeep")."""

    #: Every table is compacted, vacuumed and its expired log removed once per this many
    #: batches, one table at a time spread over them (0 = never: no compaction, VACUUM, log
    #: removal or history retention by the job; the table properties below still apply).
    every_n_batches: int = 20
    #: Compaction rewrites files smaller than this into files of about this size.
    target_file_mb: int = 64
    #: ``delta.checkpointInterval``: a log checkpoint every this many commits.
    checkpoint_interval: int = 100
    #: ``delta.logRetentionDuration``: log entries older than this (and older than the
    #: newest checkpoint before them) are removed: how far back time travel reaches.
    log_retention_hours: int = 12
    #: ``delta.deletedFileRetentionDuration``: data files no longer in the table stay this long
    #: for readers of older versions, then VACUUM removes them.
    deleted_file_retention_hours: int = 12
    #: A day of snapshots more than this many days before the stream's clock, and written more
    #: than this long ago, is deleted from every table at once (``groupwatch.upkeep``,
    #: docs/tables.md "How long rows are kept"; 0 = keep forever).
    history_retention_days: int = 90
    #: Closed ``partition_ownership`` intervals whose ``to_date`` (the day they closed) is more
    #: than this many days before the stream's clock are deleted (0 = keep forever; open
    #: intervals always stay).  Shorter than the history's: the dashboard's partition history
    #: and analysts' queries read every day kept (docs/job.md, "Why 12 hours of log and a month
    #: of nothing").
    ownership_retention_days: int = 30
    #: ``findings`` rows detected more than this many days before the stream's clock are
    #: deleted (0 = keep forever).  Every batch that finds something MERGEs into the whole
    #: table (a finding id may be anywhere in it), about 0.14 s per million findings kept
    #: (bench/HISTORY.md, "The findings MERGE and the findings kept"): a year bounds that and
    #: keeps a year of "when did it go wrong".
    findings_retention_days: int = 365
    #: A past day of the history tables (``group_snapshots``, ``member_assignments``, closed
    #: ``partition_ownership`` intervals) is rewritten once, sorted by group in row groups of
    #: at most this many rows, so that one group's rows of a month are read from a row group
    #: per day (docs/job.md, "Table upkeep"; 0 = never).
    cluster_row_group_rows: int = 16384


_DETECTOR = DetectorConfig()


def _engine(name: str, per: int = 1) -> Any:
    """A ``[detect]`` key that sets the engine's field ``name`` (its value times ``per``: the
    file says seconds where the engine counts milliseconds), with the engine's default."""
    default = getattr(_DETECTOR, name)
    if per != 1:
        default //= per
    return field(default=default, metadata={"engine": name, "per": per})


#: Engine fields no ``[detect]`` key sets: protocol facts, memory bounds and what the job
#: learns from the brokers (a test holds every other engine field to a key).
ENGINE_ONLY = frozenset(
    {
        "sticky_protocols",
        "default_rebalance_timeout_ms",
        "max_named_members",
        "topic_names",
        "max_inferred_topics",
        "max_remembered_findings",
        "broker_partitions",
        "broker_partitions_as_of_ms",
    }
)


@dataclass(frozen=True)
class DetectSection:
    """The ``[detect]`` section as written: the findings engine's thresholds
    (``docs/findings.md`` explains each).  A key made with ``_engine`` sets that field of
    :class:`DetectorConfig`, in the file's unit; the others are read by :meth:`detector` itself
    or by the job.  Named for the file's section so that it is never read as the engine's own
    :class:`DetectorConfig`, which :meth:`detector` builds."""

    #: Protocols following KIP-429's two-phase hand-over, comma separated.
    cooperative_protocols: str = ",".join(_DETECTOR.cooperative_protocols)
    storm_generations: int = _engine("storm_generations")
    storm_window_seconds: int = _engine("storm_window_ms", 1000)
    churn_generations: int = _engine("churn_generations")
    #: Stream time after which an unconfirmed transient finding is raised anyway.
    confirm_seconds: int = _engine("confirm_after_ms", 1000)
    #: KIP-848/streams groups: how long a violation must hold before it is raised.
    modern_confirm_seconds: int = _engine("modern_confirm_ms", 1000)
    #: Slack beyond a member's rebalance timeout before ``revocation_overdue``.
    revocation_grace_seconds: int = _engine("revocation_grace_ms", 1000)
    #: How long a member may wait UNRELEASED before ``unreleased_too_long``.
    unreleased_max_seconds: int = _engine("unreleased_max_ms", 1000)
    #: How long the group epoch may stay above the assignment epoch.
    assignment_lag_max_seconds: int = _engine("assignment_lag_max_ms", 1000)
    #: The brokers' session timeout for static members away at epoch -2.
    static_session_timeout_seconds: int = _engine("static_session_timeout_ms", 1000)
    #: ``rebalance_stuck`` from the records: generations missing between two records ...
    stuck_skipped_generations: int = _engine("stuck_skipped_generations")
    #: ... after this long without a commit or a completed generation.
    stuck_skipped_after_seconds: int = _engine("stuck_skipped_after_ms", 1000)
    #: ``rebalance_stuck`` from the brokers' view: how long a rebalancing group may go without
    #: a completed generation or a commit.
    stuck_after_seconds: int = _engine("stuck_after_ms", 1000)
    #: Share groups: how long a share partition's start offset may stand still while records
    #: wait and members are assigned it, before ``share_partition_stalled``.
    share_stall_seconds: int = _engine("share_stall_ms", 1000)
    #: The brokers' ``group.share.delivery.count.limit`` (no record states it).
    share_delivery_count_limit: int = _engine("share_delivery_count_limit")
    #: In-flight records at the limit minus one or more that make ``share_delivery_retries``.
    share_retry_records: int = _engine("share_retry_records")
    #: How often the job's driver asks the brokers which groups are rebalancing (0 = never).
    stuck_check_seconds: int = 30
    #: The brokers' Kafka version (e.g. ``4.1.1``), "" if unknown.
    broker_version: str = ""
    #: Known partition counts, topic -> count; topics not listed are inferred from records.
    partitions: Mapping[str, str] = field(default_factory=dict)
    #: From when ``partitions`` hold: "" = from when the job starts (a count stated today says
    #: nothing about last month), an ISO-8601 time, or "always" (every record).
    partitions_since: str = ""

    def engine_values(self) -> dict[str, int]:
        """The engine's fields the plain keys set, in the engine's units."""
        return {
            f.metadata["engine"]: getattr(self, f.name) * f.metadata["per"]
            for f in dataclasses.fields(self)
            if "engine" in f.metadata
        }

    def detector(self, now_ms: int | None = None) -> DetectorConfig:
        """The engine's own configuration object (``now_ms``: when the job starts)."""
        try:
            counts = {topic: int(n) for topic, n in self.partitions.items()}
        except ValueError as exc:
            raise ConfigError(f"detect.partitions: counts must be integers ({exc})") from None
        try:
            since = partitions.parse_since(
                self.partitions_since, partitions.now_ms() if now_ms is None else now_ms
            )
        except partitions.PartitionsError as exc:
            raise ConfigError(f"detect.partitions_since: {exc}") from exc
        protocols = tuple(p.strip() for p in self.cooperative_protocols.split(",") if p.strip())
        # Each key's field and unit are held to the engine's by tests/unit/test_config.py.
        engine: dict[str, Any] = self.engine_values()
        try:
            return replace(
                _DETECTOR,
                cooperative_protocols=protocols,
                broker_version=self.broker_version or None,
                partitions_per_topic=counts,
                partitions_as_of_ms=since if counts else None,
                **engine,
            )
        except ValueError as exc:
            raise ConfigError(f"[detect]: {exc}") from exc


@dataclass(frozen=True)
class LagConfig:
    """Consumer lag (``docs/lag.md``): how often the brokers are asked, what is kept, the rules."""

    #: The driver asks the brokers for every committed-to partition's start and end offsets
    #: this often (the resolution of seconds behind).
    poll_seconds: int = 15
    #: ``end_offsets`` and ``lag_history`` rows older than this are trimmed by upkeep.
    history_hours: int = 168
    #: A partition whose log end keeps moving gets an ``end_offsets`` row at most this often
    #: (the start and end of every flat run are rows whatever this is): what a restart's
    #: estimates have between two rows is a straight line, exact on a steady producer.
    history_row_seconds: int = 60
    #: ``lagging``: the oldest waiting record older than this for a whole window ...
    warn_seconds: int = 120
    #: ... of this length, and the lag not shrinking over it.
    window_seconds: int = 300
    #: ``stopped`` (no commit) / ``stalled`` (commits, no move) for this long while the
    #: oldest waiting record is at least this old.
    stop_seconds: int = 300
    #: An empty group's partition without a commit this long is retired: shown idle, its
    #: ``consumer_stopped`` resolved (a group whose members all crashed alerts until then).
    retire_hours: int = 24
    #: One Prometheus series per partition (``groupwatch_partition_lag_records``); off by
    #: default to bound the series count.
    partition_metrics: bool = False
    #: Judge polls in a Python process of their own instead of a driver thread: the
    #: judgement's seconds of Python at fleet scale (3-6 s a poll at 1.2 M committed
    #: partitions, judged as columns) then share no interpreter with the batches, and the
    #: keeper's memory leaves the driver
    #: (batch p95 0.84x on the live model, record -> finding p95 0.76x at fleet scale:
    #: bench/HISTORY.md, "A poll judged in a process of its own").  False: a driver thread
    #: judges, as before.
    judge_process: bool = True

    def rules(self) -> LagRules:
        """The pure core's thresholds."""
        if self.poll_seconds <= 0:
            raise ConfigError("lag.poll_seconds: must be positive")
        if self.history_row_seconds < 0:
            raise ConfigError("lag.history_row_seconds: must be 0 or more")
        return LagRules(
            poll_ms=self.poll_seconds * 1000,
            warn_ms=self.warn_seconds * 1000,
            stop_ms=self.stop_seconds * 1000,
            window_ms=self.window_seconds * 1000,
            retire_ms=self.retire_hours * 3_600_000,
        )


@dataclass(frozen=True)
class ValidationConfig:
    """Great Expectations on the rows each micro-batch writes."""

    #: Validate every N-th micro-batch (0 = never). Each run costs a few Spark jobs.
    every_n_batches: int = 10
    #: Folder of GX suite files, one ``<table>.json`` per validated table.
    suites: str = "conf/expectations"


@dataclass(frozen=True)
class AlertsConfig:
    """The built-in notifier the job runs after each batch."""

    #: Rules and webhooks (``conf/alerts.toml``); "" turns the notifier off.
    rules: str = "conf/alerts.toml"


@dataclass(frozen=True)
class MetricsConfig:
    """The Prometheus endpoint of the job."""

    host: str = "127.0.0.1"
    #: 0 turns the endpoint off.
    port: int = 9464


@dataclass(frozen=True)
class SparkConfig:
    """The Spark session the job builds (ignored for keys spark-submit already set)."""

    master: str = "local[*]"
    shuffle_partitions: int = 4
    ui_enabled: bool = False
    #: Any further Spark settings, verbatim.
    conf: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """The whole configuration, one attribute per TOML section."""

    source: SourceConfig = field(default_factory=SourceConfig)
    delta: DeltaConfig = field(default_factory=DeltaConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    job: JobConfig = field(default_factory=JobConfig)
    detect: DetectSection = field(default_factory=DetectSection)
    lag: LagConfig = field(default_factory=LagConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    upkeep: UpkeepConfig = field(default_factory=UpkeepConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)

    def table_path(self, table: str) -> str:
        """The folder of one Delta table under ``delta.root`` (a path or a URI)."""
        return locations.join(self.delta.root, table)

    def checkpoint_path(self, query: str) -> str:
        """The checkpoint folder of one streaming query under ``checkpoint.root``."""
        return locations.join(self.checkpoint.root, query)


#: The TOML sections, in the order they are documented.
SECTIONS: dict[str, type[Any]] = {
    "source": SourceConfig,
    "delta": DeltaConfig,
    "checkpoint": CheckpointConfig,
    "storage": StorageConfig,
    "job": JobConfig,
    "detect": DetectSection,
    "lag": LagConfig,
    "validation": ValidationConfig,
    "metrics": MetricsConfig,
    "alerts": AlertsConfig,
    "upkeep": UpkeepConfig,
    "spark": SparkConfig,
}


def _default_type(f: dataclasses.Field[Any]) -> type[Any]:
    if "kind" in f.metadata:  # a key whose default (unset) is not of its type
        kind: type[Any] = f.metadata["kind"]
        return kind
    if f.default_factory is not dataclasses.MISSING:
        return type(f.default_factory())
    return type(f.default)


def _coerce(where: str, raw: Any, kind: type[Any], *, from_text: bool) -> Any:
    """Turn a TOML value (or, with ``from_text``, a string from env/--set) into ``kind``."""
    if from_text and isinstance(raw, str):
        text = raw.strip()
        if kind is bool:
            lowered = text.lower()
            if lowered in ("true", "1", "yes", "on"):
                return True
            if lowered in ("false", "0", "no", "off"):
                return False
            raise ConfigError(f"{where}: expected true or false, got {raw!r}")
        if kind is int:
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"{where}: expected an integer, got {raw!r}") from None
        if kind is dict:
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: expected a JSON object, got {raw!r}") from exc
        if kind is str:
            return raw
    if kind is bool and not isinstance(raw, bool):
        raise ConfigError(f"{where}: expected true or false, got {raw!r}")
    if kind is int and (isinstance(raw, bool) or not isinstance(raw, int)):
        raise ConfigError(f"{where}: expected an integer, got {raw!r}")
    if kind is str and not isinstance(raw, str):
        raise ConfigError(f"{where}: expected a string, got {raw!r}")
    if kind is dict:
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: expected a table of settings, got {raw!r}")
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in raw.items()}
    return raw


def _key_types(section: str) -> dict[str, type[Any]]:
    return {f.name: _default_type(f) for f in dataclasses.fields(SECTIONS[section])}


def _check_key(section: str, key: str, where: str) -> type[Any]:
    if section not in SECTIONS:
        raise ConfigError(
            f"{where}: unknown section {section!r}; known sections: {', '.join(SECTIONS)}"
        )
    keys = _key_types(section)
    if key not in keys:
        raise ConfigError(
            f"{where}: unknown key {section}.{key}; keys of [{section}]: {', '.join(sorted(keys))}"
        )
    return keys[key]


def _put(table: dict[str, Any], key: str, value: Any) -> None:
    """Set a key; a table-valued key (Kafka options, Spark conf) is merged, not replaced, so a
    secret from the environment adds to the options in the file."""
    if isinstance(value, dict) and isinstance(table.get(key), dict):
        table[key] = {**table[key], **value}
    else:
        table[key] = value


def load(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Iterable[str] = (),
) -> Config:
    """Load the configuration: defaults < TOML file < environment < ``section.key=value`` list."""
    values: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}

    conf_path = Path(path) if path is not None else DEFAULT_CONF
    if path is not None or conf_path.exists():
        try:
            with open(conf_path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"configuration file {conf_path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{conf_path}: not valid TOML: {exc}") from exc
        for section, table in data.items():
            if not isinstance(table, dict):
                raise ConfigError(f"{conf_path}: {section!r} must be a [section]")
            for key, raw in table.items():
                where = f"{conf_path}: {section}.{key}"
                kind = _check_key(section, key, where)
                values[section][key] = _coerce(where, raw, kind, from_text=False)

    environ = os.environ if env is None else env
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        env_section = next((s for s in SECTIONS if rest.startswith(s + "_")), None)
        if env_section is None:
            continue  # GROUPWATCH_HOME and friends are not configuration keys
        key = rest[len(env_section) + 1 :]
        kind = _check_key(env_section, key, f"environment variable {name}")
        where = f"environment variable {name}"
        _put(values[env_section], key, _coerce(where, raw, kind, from_text=True))

    for item in overrides:
        name, sep, raw = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot:
            raise ConfigError(f"--set {item!r}: expected section.key=value")
        kind = _check_key(section, key, f"--set {name}")
        _put(values[section], key, _coerce(f"--set {name}", raw, kind, from_text=True))

    if not values["storage"].get("region"):
        # The contract's default region: the environment's, as the AWS chain reads it.
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or ""
        if region:
            values["storage"]["region"] = region
    built = {s: cls(**values[s]) for s, cls in SECTIONS.items()}
    return Config(**built)


def to_dict(config: Config, *, redact: bool = True) -> dict[str, dict[str, Any]]:
    """The configuration as plain data; secrets in option tables are masked unless asked not to."""
    out: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        table = dataclasses.asdict(getattr(config, section))
        for key, value in table.items():
            if isinstance(value, dict) and redact:
                table[key] = {k: ("***" if is_secret(k) else v) for k, v in value.items()}
        out[section] = table
    return out


_SECRET_HINTS = (
    "password",
    "secret",
    "jaas",
    "token",
    "credential",
    "key.pem",
    "keystore.key",
    # object-store options ([storage.options]): Azure account keys, GCS service-account keys
    "account_key",
    "access_key",
    "service_account",
)


def is_secret(option: str) -> bool:
    """Whether a client option's value must never be printed (passwords, JAAS lines, keys)."""
    lowered = option.lower()
    return any(hint in lowered for hint in _SECRET_HINTS)
