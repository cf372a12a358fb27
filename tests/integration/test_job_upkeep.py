"""The job's own table upkeep over many batches on real Delta tables: the same rows as a run
without upkeep, files per table and partition bounded by the upkeep's turn, the table
properties set, and the log cut back once its entries have expired."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from groupwatch import config, upkeep
from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests.integration.crash import WALL_CLOCK
from tests.integration.test_job_scenarios import namespaced

pytestmark = [pytest.mark.broker, pytest.mark.spark]

MIRROR = "upkeep-mirror"
#: Upkeep of every table every this many batches (below the table count: all at once).
EVERY = 2
CHECKPOINT_INTERVAL = 2
#: The first scenarios of the library: 15 records, enough batches for the bounds to bite.
SCENARIOS = 6


@pytest.fixture(scope="module")
def mirror(broker: str) -> dict[str, int]:
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()[:SCENARIOS]]
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    for doc in docs:
        replay(broker, MIRROR, raw_records(doc))
    return {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}


def _config(broker: str, root: Path, counts: dict[str, int], every: int) -> config.Config:
    return config.load(
        None,
        env={},
        overrides=[
            f"source.bootstrap_servers={broker}",
            f"source.topic={MIRROR}",
            # Four or more micro-batches over the 15 records.
            "source.max_offsets_per_trigger=2",
            f"delta.root={root / 'delta'}",
            f"checkpoint.root={root / 'checkpoints'}",
            "validation.every_n_batches=3",
            "job.state_maintenance_every_n_batches=4",
            "metrics.port=0",
            "alerts.rules=",
            f"upkeep.every_n_batches={every}",
            f"upkeep.checkpoint_interval={CHECKPOINT_INTERVAL}",
            f"detect.partitions={json.dumps(counts)}",
        ],
    )


def run_once(spark, cfg: config.Config) -> None:  # type: ignore[no-untyped-def]
    """The job over everything in the source, once, however long a loaded machine takes."""
    from groupwatch.spark.query import GroupwatchQuery

    GroupwatchQuery.from_config(spark, cfg).writer(once=True).start().awaitTermination()


def _table(root: Path, name: str) -> list[str]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(root / "delta" / name)).to_pyarrow_table().to_pylist()
    for row in rows:
        for column in WALL_CLOCK & row.keys():
            row.pop(column)
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in rows)


def _files_per_partition(root: Path, name: str) -> dict[str, int]:
    import pyarrow as pa  # type: ignore[import-untyped]
    from deltalake import DeltaTable

    adds = pa.table(DeltaTable(str(root / "delta" / name)).get_add_actions(flatten=True))
    keys = [c for c in adds.column_names if c.startswith("partition.")]
    counts: dict[str, int] = {}
    for add in adds.to_pylist():
        key = "/".join(str(add[k]) for k in keys)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _commits(root: Path, name: str) -> int:
    return len(list((root / "delta" / name / "_delta_log").glob("*.json")))


def _age(root: Path, hours: float) -> None:
    for name in TABLES:
        log_dir = root / "delta" / name / "_delta_log"
        for entry in log_dir.iterdir():
            stamp = entry.stat().st_mtime - hours * 3600
            os.utime(entry, (stamp, stamp))


def test_upkeep_keeps_tables_small_and_equal_to_a_run_without_it(
    spark, mirror: dict[str, int], broker: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from deltalake import DeltaTable

    plain_root, kept_root = tmp_path / "plain", tmp_path / "kept"
    run_once(spark, _config(broker, plain_root, mirror, 0))
    kept = _config(broker, kept_root, mirror, EVERY)
    run_once(spark, kept)
    batches = len(list((kept_root / "checkpoints" / "groupwatch" / "commits").glob("[0-9]*")))
    assert batches >= 4
    for name in TABLES:
        if name not in POLLED_TABLES:
            assert _table(kept_root, name) == _table(plain_root, name), name
        # The properties are on every table.
        props = DeltaTable(str(kept_root / "delta" / name)).metadata().configuration
        for key, value in upkeep.properties(kept.upkeep).items():
            assert props.get(key) == value, (name, key)
    # Without upkeep an appended partition holds a file per batch that wrote to it; with
    # it, what a turn left (one file) and the batches since.
    most = {n: max(_files_per_partition(kept_root, n).values(), default=0) for n in TABLES}
    assert all(count <= EVERY + 1 for count in most.values()), most
    unkept = {n: max(_files_per_partition(plain_root, n).values(), default=0) for n in TABLES}
    assert max(unkept.values()) > EVERY + 1, unkept

    # Half a day later (the log's retention is 12 hours), the next upkeep turns (the job's
    # own, as its next batch would run them) cut each log back to the checkpoint before the
    # newest entries; without upkeep it stays whole.
    from groupwatch.spark import upkeep as job_upkeep

    _age(kept_root, 13)
    before = {n: _commits(kept_root, n) for n in TABLES}
    # Batches 0 and 1 between them hold every table's turn (EVERY = 2).
    done = job_upkeep.run(spark, kept, 0, None) + job_upkeep.run(spark, kept, 1, None)
    assert {d.table for d in done} == set(TABLES)
    after = {n: _commits(kept_root, n) for n in TABLES}
    busy = [n for n in TABLES if before[n] > CHECKPOINT_INTERVAL + 4]
    assert busy, before
    for name in busy:
        # Only what follows the newest checkpoint (and the turn's own commits) is left.
        assert after[name] <= CHECKPOINT_INTERVAL + 4, (name, before[name], after[name])
    for name in set(TABLES) - set(POLLED_TABLES):
        assert _table(kept_root, name) == _table(plain_root, name), name
