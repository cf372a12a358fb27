"""The scenario library replayed through Kafka and the job: exactly the expected findings land.

Every scenario's records are encoded, produced into an ordinary mirror topic (a group's records
in one partition, in order, with their event time as the Kafka timestamp), and the job reads the
mirror once. Scenarios reuse topic names with different partition counts, so each scenario's
topics get its own prefix here; the job then knows every count from `detect.partitions`.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config
from groupwatch.protocol import decode_record
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests.realgroups import run_once, table
from tests.scenarios.test_scenarios import check

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "scenario-mirror"


def _rename_tps(spec: dict[str, Any] | None, prefix: str) -> dict[str, Any] | None:
    return None if spec is None else {prefix + t: ps for t, ps in spec.items()}


def namespaced(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The scenario with every topic name prefixed (records, counts and expectations)."""
    doc = copy.deepcopy(doc)

    def fix(rec: dict[str, Any]) -> None:
        if "record" in rec:
            fix(rec["record"])
        if "commit" in rec:
            rec["commit"]["topic"] = prefix + rec["commit"]["topic"]
        for m in rec.get("members", []):
            m["topics"] = [prefix + t for t in m.get("topics", [])]
            for key in ("owned", "assigned"):
                if key in m:
                    m[key] = _rename_tps(m[key], prefix)
            if isinstance(m.get("sticky"), dict) and "previous" in m["sticky"]:
                m["sticky"]["previous"] = _rename_tps(m["sticky"]["previous"], prefix)

    for rec in doc["records"]:
        fix(rec)
    if doc.get("partitions"):
        doc["partitions"] = {prefix + t: n for t, n in doc["partitions"].items()}
    for pattern in [*doc.get("expect", []), *doc.get("forbid", [])]:
        if pattern.get("topic"):
            pattern["topic"] = prefix + pattern["topic"]
    return doc


HOUR_MS = 3_600_000


def mirror_records(docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every scenario's raw records, scenario k shifted k hours later so that each partition's
    time only moves forward, then one record per partition later still: each scenario's last
    state persists, as `tests/scenarios` judges it."""
    out: list[dict[str, Any]] = []
    for k, doc in enumerate(docs.values()):
        for rec in raw_records(doc):
            out.append({**rec, "timestamp": rec["timestamp"] + k * HOUR_MS})
    end = max(r["timestamp"] for r in out) + HOUR_MS
    clock = {"records": [{"commit": {"group": "clock", "topic": "clock", "partition": 0}}]}
    tick = raw_records(clock)[0]
    out += [
        {**tick, "partition": p, "timestamp": end} for p in sorted({r["partition"] for r in out})
    ]
    return out


def mirror_config(broker: str, root: Path, counts: dict[str, int], *extra: str) -> config.Config:
    """The job over the mirror topic, knowing every scenario's partition counts."""
    return config.load(
        None,
        env={},
        overrides=[
            f"source.bootstrap_servers={broker}",
            f"source.topic={MIRROR}",
            f"delta.root={root / 'delta'}",
            f"checkpoint.root={root / 'checkpoints'}",
            "metrics.port=0",
            f"detect.partitions={json.dumps(counts)}",
            "detect.partitions_since=always",  # the records are older than the job
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def scenarios(broker: str) -> dict[str, dict[str, Any]]:
    docs = {p.stem: namespaced(load(p), f"{p.stem}.") for p in scenario_files()}
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    replay(broker, MIRROR, mirror_records(docs))
    return docs


#: A state cache's budget that holds the library's keys and only some of its texts (bytes): the
#: batches read the others from the table by key.
SMALL_CACHE = 16_000


@pytest.mark.parametrize(
    ("per_batch", "driver_stage_rows"),
    [("40", "20000"), ("40", "0"), ("0", "20000"), ("0", "0")],
    ids=["state-cache", "state-cache-workers", "one-batch", "one-batch-workers"],
)
def test_the_job_and_analyze_agree(
    spark,
    scenarios,
    broker: str,
    tmp_path: Path,
    per_batch: str,
    driver_stage_rows: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # type: ignore[no-untyped-def]
    """One record sequence, two drivers: the job (in several batches, or in one) and analyze
    raise the same findings, id for id, in the same words and with the same evidence; whether
    batches read their groups' state from the driver's cache (with some texts dropped over its
    budget and read by key), and run their Python stage on the driver (the batch's every commit
    of its groups) or in the workers (the first commit of each partition and the last before
    each generation)."""
    from groupwatch.detect import Analyzer, DetectorConfig

    counts = {t: n for doc in scenarios.values() for t, n in (doc.get("partitions") or {}).items()}
    records = sorted(mirror_records(scenarios), key=lambda r: r["partition"])  # as produced
    offsets: dict[int, int] = {}
    for rec in records:  # where the mirror holds them
        rec["topic"], rec["offset"] = MIRROR, offsets.get(rec["partition"], 0)
        offsets[rec["partition"]] = rec["offset"] + 1
    analyzer = Analyzer(DetectorConfig(partitions_per_topic=counts))
    expected = {f.finding_id: f for line in records for f in analyzer.feed(line)}
    cfg = mirror_config(
        broker,
        tmp_path,
        counts,
        f"source.max_offsets_per_trigger={per_batch}",
        "validation.every_n_batches=0",
        f"job.driver_stage_rows={driver_stage_rows}",
    )
    from groupwatch.spark import query, state_store

    small = per_batch != "0"
    if small:
        # Batches of 40 with a cache too small for every text: its keys all held, the texts
        # written longest ago dropped and read by key, on the driver or in the workers (the
        # crash tests' killed run holds no text at all).
        monkeypatch.setattr(state_store, "cache_budget", lambda _: SMALL_CACHE)
    steps: set[str] = set()
    with caplog.at_level("WARNING", logger="groupwatch.job"):
        run_once(spark, cfg, step_clock=lambda name, _: steps.add(name))
    dropped = "state texts are over job.state_cache_mb" in caplog.text
    assert dropped == small, caplog.text
    assert "state cache off" not in caplog.text

    on_driver = driver_stage_rows != "0"
    assert (query.DRIVER_PYTHON in steps) == on_driver, steps
    assert (query.PYTHON in steps) == (not on_driver), steps
    rows = table(spark, cfg, "findings").collect()
    got = {r.finding_id: (r.kind, r.group) for r in rows}
    missing = sorted((f.kind, f.group, f.generation) for i, f in expected.items() if i not in got)
    extra = sorted(v for i, v in got.items() if i not in expected)
    assert not missing and not extra, f"only analyze: {missing}; only the job: {extra}"
    # What the finding says, not only that it was raised: a silence measured from another
    # commit names the same finding with other words.
    for r in rows:
        f = expected[r.finding_id]
        said = (r.detail, json.loads(r.evidence), list(r.members or ()))
        assert said == (f.detail, dict(f.evidence), list(f.members)), (f.kind, f.group)
    assert any(f.kind == "unassigned_partitions" for f in expected.values())


#: The job's two writers: the batch on the driver (its Python stage, writes by delta-rs and
#: Great Expectations in pandas), and the same in Spark (the stage in the workers, the writes
#: and GX by Spark, as a batch above both thresholds goes; Spark writes a partition column
#: into each data file as well as its directory's name).
WRITERS: dict[str, tuple[str, ...]] = {
    "driver": (),
    "spark": ("job.driver_stage_rows=0", "delta.driver_write_rows=0"),
}


@pytest.fixture(scope="module")
def through_the_job(
    spark, scenarios, broker: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], tuple[config.Config, list[str]]]:  # type: ignore[no-untyped-def]
    """The mirror read once by the job for each of :data:`WRITERS`, on first use: (its
    configuration, the steps its batches ran).  The job's own upkeep is off so that the tables
    hold what the writer wrote (:func:`test_every_page_shows_the_same_from_every_writer` runs
    upkeep's rewrites itself)."""
    counts = {t: n for doc in scenarios.values() for t, n in (doc.get("partitions") or {}).items()}
    done: dict[str, tuple[config.Config, list[str]]] = {}

    def run(writer: str) -> tuple[config.Config, list[str]]:
        if writer not in done:
            root = tmp_path_factory.mktemp(f"through-the-job-{writer}")
            cfg = mirror_config(
                broker,
                root,
                counts,
                "validation.every_n_batches=1",
                "upkeep.every_n_batches=0",
                *WRITERS[writer],
            )
            steps: list[str] = []
            run_once(spark, cfg, step_clock=lambda name, seconds: steps.append(name))
            done[writer] = (cfg, steps)
        return done[writer]

    return run


@pytest.mark.parametrize("writer", list(WRITERS))
def test_scenarios_through_the_job(spark, scenarios, through_the_job, writer: str) -> None:  # type: ignore[no-untyped-def]
    cfg, steps = through_the_job(writer)
    where = WRITERS[writer]
    from groupwatch.spark import query

    assert (query.DRIVER_PYTHON in steps) == (not where), steps
    rows = [r.asDict(recursive=True) for r in table(spark, cfg, "findings").collect()]
    for row in rows:
        row["evidence"] = json.loads(row["evidence"])
    for name, doc in scenarios.items():
        groups = {f["group"] for f in rows} & scenario_groups(doc)
        found = [f for f in rows if f["group"] in groups]
        check(doc, found)  # same expectations as the engine's own scenario test
        assert found or not doc["expect"], name
    # A scenario's bad records are kept with their bytes.
    quarantine = table(spark, cfg, "quarantine").collect()
    decode = [q for q in quarantine if q.stage == "decode"]
    assert {q.group for q in decode} == {"kind-decode"} and len(decode) == 2
    assert all(q.key and q.quarantined_at for q in quarantine)
    # The member assigned a topic it does not subscribe to also fails Great Expectations.
    validated = [q for q in quarantine if q.stage == "validate"]
    assert any(q.group == "kind-unsubscribed" for q in validated)
    for q in validated:  # each with its own record's bytes
        rec = decode_record(bytes(q.key), bytes(q.value))
        assert (rec.group, rec.record_type) == (q.group, "group_metadata")
        assert rec.error is None and rec.value is not None


def scenario_groups(doc: dict[str, Any]) -> set[str]:
    out = set()
    for rec in doc["records"]:
        rec = rec.get("record", rec)
        for key in ("group", "tombstone", "garbage"):
            if isinstance(rec.get(key), str):
                out.add(rec[key])
        if "commit" in rec:
            out.add(rec["commit"]["group"])
    return out


def _tidied(source: Path, into: Path, settings: config.UpkeepConfig) -> Path:
    """A copy of the tables under ``source`` after upkeep's rewrites, as the job makes them:
    every day of the day-clustered tables rewritten sorted by group, then every table
    compacted (both by delta-rs)."""
    from deltalake import DeltaTable

    from groupwatch import tables, upkeep

    shutil.copytree(source, into)
    for name, column in upkeep.CLUSTERED_TABLES.items():
        target = DeltaTable(str(into / name))
        days = {p[column] for p in target.partitions() if p.get(column)}
        for day in sorted(days):
            upkeep.cluster_day(target, column, day, settings, tables.TABLES[name].partition_by)
    for each in tables.TABLES.values():
        if (into / each.name / "_delta_log").is_dir():
            upkeep.tidy(into / each.name, each, settings, cutoff=None)
    return into


def _inside(root: Path, name: str) -> set[bool]:
    """Whether each data file of ``name`` under ``root`` carries its partition column inside."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]
    from deltalake import DeltaTable

    partition = DeltaTable(str(root / name)).metadata().partition_columns
    return {
        any(c in pq.read_schema(f).names for c in partition)
        for f in DeltaTable(str(root / name)).file_uris()
    }


_SHOWN_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def _shown(markup: Any, newest: dt.datetime) -> str:
    """What a page shows: its text, but a time after ``newest`` (the records' newest): when
    the job ran (a validation run, a record quarantined), which is each run's own."""

    def when(m: re.Match[str]) -> str:
        at = dt.datetime.fromisoformat(m[0]).replace(tzinfo=dt.UTC)
        return m[0] if at <= newest else "(when the job ran)"

    return _SHOWN_TIME.sub(when, " ".join("".join(markup.itertext()).split()))


def test_every_page_shows_the_same_from_every_writer(  # type: ignore[no-untyped-def]
    scenarios, through_the_job, tmp_path: Path
) -> None:
    """The scenarios' tables as each of the job's writers leaves them (Spark's files carry
    ``snapshot_date`` inside, delta-rs's do not) and after upkeep's day clustering and
    compaction of each: every page (the fleet, and each group's page, partition history and
    the data health) lists the same groups with the same rows."""
    from tests.dashboard.every_page import every_page

    roots = {}
    for writer in WRITERS:
        cfg, _ = through_the_job(writer)
        roots[writer] = Path(cfg.delta.root)
        roots[f"{writer}, upkeep"] = _tidied(roots[writer], tmp_path / writer, cfg.upkeep)
    # What each writer left: the case a reading by directory name broke, and its rewrites.
    assert _inside(roots["spark"], "member_assignments") == {True}
    assert _inside(roots["spark"], "group_snapshots") == {True}
    for name in ("driver", "driver, upkeep", "spark, upkeep"):
        assert _inside(roots[name], "member_assignments") == {False}, name
    newest = dt.datetime.fromtimestamp(
        max(r["timestamp"] for r in mirror_records(scenarios)) / 1000, dt.UTC
    )
    seen = {name: every_page(root) for name, root in roots.items()}
    want = seen["driver"]
    for name, pages in seen.items():
        assert sorted(pages) == sorted(want), name
        for key, markup in pages.items():
            assert _shown(markup, newest) == _shown(want[key], newest), (name, key)


# --- the modern-group library (KIP-848 consumer, streams and share groups) ------------------

MODERN_MIRROR = "modern-scenario-mirror"


def modern_runs(
    docs: dict[str, dict[str, Any]],
) -> list[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
    """The modern scenarios by the detector settings they need (``config``): one job run each,
    since the settings are the job's, not a group's."""
    by_settings: dict[str, dict[str, dict[str, Any]]] = {}
    for name, doc in sorted(docs.items()):
        key = json.dumps(doc.get("config") or {}, sort_keys=True)
        by_settings.setdefault(key, {})[name] = doc
    return [(json.loads(key), group) for key, group in sorted(by_settings.items())]


@pytest.fixture(scope="module")
def modern_mirrors(
    broker: str,
) -> list[tuple[str, dict[str, Any], dict[str, dict[str, Any]], list[dict[str, Any]]]]:
    """Per job run: the mirror topic, the settings, the scenarios, and their records as
    produced (Kafka's bytes; each scenario on its own partition with its own timestamps)."""
    from tests.scenarios.modern_records import build
    from tests.scenarios.modern_records import load_all as load_modern

    docs = load_modern()
    raw = build(docs)
    out = []
    for i, (settings, run_docs) in enumerate(modern_runs(docs)):
        topic = f"{MODERN_MIRROR}-{i}"
        records = [rec for name in run_docs for rec in raw[name]]
        create_topic(broker, topic, OFFSETS_PARTITIONS)
        replay(broker, topic, records)
        out.append((topic, settings, run_docs, records))
    return out


def test_modern_scenarios_through_the_job(
    spark, modern_mirrors, broker: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The modern library read by the job in several batches: the findings table meets every
    scenario's expectations (those of ``tests/scenarios/test_modern_scenarios.py``), holds
    exactly what analyze raises over the same records (closed by ``finish()``), and every
    record decodes."""
    from groupwatch.detect import Analyzer, DetectorConfig
    from tests.scenarios.modern_records import groups

    assert len(modern_mirrors) >= 2, "the broker_version scenario needs a run of its own"
    for i, (topic, settings, docs, records) in enumerate(modern_mirrors):
        counts = {t: n for doc in docs.values() for t, n in (doc.get("partitions") or {}).items()}
        cfg = mirror_config(
            broker,
            tmp_path / f"run-{i}",
            counts,
            f"source.topic={topic}",
            # two batches for the ~600 records: the first limited, the last (a few hundred
            # records, well under the limit minus the partitions it advances) a quiescent point
            "source.max_offsets_per_trigger=400",
            "validation.every_n_batches=1",
            *(f"detect.{key}={value}" for key, value in settings.items()),
        )
        run_once(spark, cfg)
        rows = [r.asDict(recursive=True) for r in table(spark, cfg, "findings").collect()]
        for row in rows:
            row["evidence"] = json.loads(row["evidence"])
        for name, doc in docs.items():
            found = [f for f in rows if f["group"] in groups(doc)]
            check(doc, found)
            assert found or not doc["expect"], name

        # The same records through analyze, as the mirror holds them.
        mirrored = [dict(r) for r in sorted(records, key=lambda r: r["partition"])]
        offsets: dict[int, int] = {}
        for rec in mirrored:
            rec["topic"], rec["offset"] = topic, offsets.get(rec["partition"], 0)
            offsets[rec["partition"]] = rec["offset"] + 1
        analyzer = Analyzer(DetectorConfig(partitions_per_topic=counts, **settings))
        expected = {f.finding_id: f for line in mirrored for f in analyzer.feed(line)}
        expected.update((f.finding_id, f) for f in analyzer.finish())
        got = {r["finding_id"]: (r["kind"], r["group"]) for r in rows}
        missing = sorted((f.kind, f.group) for key, f in expected.items() if key not in got)
        extra = sorted(v for key, v in got.items() if key not in expected)
        assert not missing and not extra, f"only analyze: {missing}; only the job: {extra}"

        quarantine = table(spark, cfg, "quarantine").collect()
        assert not [q.group for q in quarantine if q.stage == "decode"]
