"""The committed offsets' fold: one MERGE of several batches' newest commits leaves
``committed_offsets`` as the batches' MERGEs one after the other do.

The rules in Python (``committed_fold.merged``) against every run of batches Hypothesis draws;
then the real thing, delta-rs MERGEs by the job's own SQL, batch by batch into one table and
folded into another by ``CommitFolder``, compared row by row.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import DeltaTable, write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch import config, tables
from groupwatch.committed_fold import VALUES, Change, fold, fold_by_values, merged
from groupwatch.delta import read as deltaread
from groupwatch.spark import committed

T0 = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)
# Few offsets, so that batches meet the table's offset and each other's often.
offsets = st.one_of(st.none(), st.integers(0, 2))


@st.composite
def changes(draw: st.DrawFn) -> Change:
    tombstone = draw(st.booleans())
    if tombstone:
        return Change(True, (None,) * len(VALUES), draw(st.integers(0, 2)), draw(st.integers(1, 3)))
    values = (draw(offsets), draw(st.integers(-1, 3)), 0, draw(st.integers(0, 99)),
              draw(st.integers(0, 99)))  # fmt: skip
    return Change(False, values, draw(st.integers(0, 2)), draw(st.integers(1, 3)))


rows = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "committed_offset": offsets,
            "leader_epoch": st.integers(-1, 3),
            "metadata_size": st.just(0),
            "commit_time": st.integers(0, 99),
            "moved_time": st.integers(0, 99),
            "commits": st.integers(1, 9),
        }
    ),  # fmt: skip
)


def _arrow(batches: list[Change]) -> pa.Table:
    """One partition's rows of ``batches``, as ``committed_changes`` holds them (shuffled)."""
    out = []
    for batch, change in enumerate(batches):
        out.append(
            {"batch_id": batch, "group": "g", "topic": "t", "partition": 0,
             "tombstone": change.tombstone, **dict(zip(VALUES, change.values, strict=True)),
             "changes": change.changes, "commits": change.commits}
        )  # fmt: skip
    random.Random(len(out)).shuffle(out)
    return pa.Table.from_pylist(out)


@settings(max_examples=2000, deadline=None)
@given(rows, st.lists(changes(), min_size=1, max_size=6))
def test_one_fold_does_what_the_batches_merges_do(
    table_row: dict[str, Any] | None, batches: list[Change]
) -> None:
    one_by_one = table_row
    for change in batches:
        one_by_one = merged(one_by_one, change)
    folded = fold(_arrow(batches)).to_pylist()
    assert len(folded) == 1
    f = folded[0]
    as_change = Change(
        f["tombstone"], tuple(f[n] for n in VALUES), f["changes"], f["commits"], f["replace"]
    )
    assert merged(table_row, as_change) == one_by_one


@st.composite
def staged(draw: st.DrawFn) -> pa.Table:
    """``committed_changes`` rows of a few batches over a few partitions (a batch holds a row
    for some of them), in any order."""
    out = []
    for batch in range(draw(st.integers(1, 6))):
        for partition in draw(st.sets(st.integers(0, 3), min_size=1)):
            change = draw(changes())
            out.append(
                {"batch_id": batch, "group": draw(st.sampled_from(["g", "h"])),
                 "topic": "t", "partition": partition, "tombstone": change.tombstone,
                 **dict(zip(VALUES, change.values, strict=True)),
                 "changes": change.changes, "commits": change.commits}
            )  # fmt: skip
    # One row per (batch, partition): a batch's newest commit per partition.
    kept = {(r["batch_id"], r["group"], r["partition"]): r for r in out}
    rows = list(kept.values())
    random.Random(draw(st.integers(0, 99))).shuffle(rows)
    return pa.Table.from_pylist(rows)


@settings(max_examples=1000, deadline=None)
@given(staged())
def test_the_fold_as_columns_is_the_fold_by_values(rows: pa.Table) -> None:
    by_values = fold_by_values(rows)
    folded = fold(rows).to_pylist()
    assert len(folded) == len(by_values)
    for f in folded:
        change = by_values[(f["group"], f["topic"], f["partition"])]
        assert f["tombstone"] == change.tombstone
        assert tuple(f[n] for n in VALUES) == change.values
        assert (f["changes"], f["commits"], f["replace"]) == (
            change.changes,
            change.commits,
            change.replace,
        )


def test_nothing_staged_folds_to_nothing() -> None:
    empty = deltaread.schema("committed_changes").empty_table()
    assert fold(empty).num_rows == 0
    assert fold(empty).column_names == ["group", "topic", "partition", "tombstone", *VALUES,
                                        "changes", "commits", "replace"]  # fmt: skip


# -- the real tables ---------------------------------------------------------------------------
def _create(root: Path, table: tables.Table) -> Path:
    path = root / table.name
    write_deltalake(str(path), deltaread.schema(table.name).empty_table())
    return path


def _batch(rng: random.Random, keys: list[tuple[str, str, int]]) -> pa.Table:
    """A batch's newest commits (``commits_columns.newest``'s columns) for some of ``keys``."""
    out = []
    for group, topic, partition in rng.sample(keys, rng.randrange(1, len(keys))):
        tombstone = rng.random() < 0.15
        offset = None if tombstone else rng.choice([None, 10, 11, 12])
        stamp = T0 + dt.timedelta(seconds=rng.randrange(100))
        out.append(
            {"group": group, "topic": topic, "partition": partition, "tombstone": tombstone,
             "committed_offset": offset, "leader_epoch": None if tombstone else 1,
             "metadata_size": None if tombstone else 0,
             "commit_time": None if tombstone else stamp,
             "moved_time": None if tombstone else stamp - dt.timedelta(seconds=rng.randrange(5)),
             "changes": rng.choice([0, 0, 1, 2]), "commits": rng.randrange(1, 4)}
        )  # fmt: skip
    types = {
        "partition": pa.int32(), "leader_epoch": pa.int32(), "metadata_size": pa.int32(),
        "commit_time": pa.timestamp("us", "UTC"), "moved_time": pa.timestamp("us", "UTC"),
        "committed_offset": pa.int64(), "changes": pa.int64(), "commits": pa.int64(),
        "tombstone": pa.bool_(), "group": pa.string(), "topic": pa.string(),
    }  # fmt: skip
    names = list(out[0])
    return pa.table({n: pa.array([r[n] for r in out], types[n]) for n in names})


def _table_rows(path: Path) -> list[dict[str, Any]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["group"], r["topic"], r["partition"]))


def test_folded_batches_leave_the_table_the_batches_merges_leave(tmp_path: Path) -> None:
    """Ten rounds of a few batches each, over twelve partitions: the batches MERGEd one by
    one (the job's ``committed.merge_newest``) into one root, appended and folded at each
    round's end by ``CommitFolder`` into another; the tables agree after every round, a
    fold run twice does nothing more, and the folded batches' rows leave the changes."""
    roots = {name: tmp_path / name for name in ("each", "folded")}
    cfgs = {n: config.load(None, env={}, overrides=[f"delta.root={r}"]) for n, r in roots.items()}
    for root in roots.values():
        for table in (tables.COMMITTED_OFFSETS, tables.COMMITTED_CHANGES):
            _create(root, table)
    keys = [(f"g{g}", f"t{t}", p) for g in range(3) for t in range(2) for p in range(2)]
    rng = random.Random(7)
    folder = committed.CommitFolder(cfgs["folded"])
    batch_id = 0
    for _ in range(10):
        for _ in range(rng.randrange(1, 4)):
            rows = _batch(rng, keys)
            committed.merge_newest(cfgs["each"], rows, batch_id)
            folder.stage(rows, batch_id)
            batch_id += 1
        assert folder.pending
        assert folder.fold() > 0
        assert _table_rows(roots["each"] / "committed_offsets") == _table_rows(
            roots["folded"] / "committed_offsets"
        )
        assert folder.fold() == 0 and not folder.pending
    version = DeltaTable(str(roots["folded"] / "committed_offsets")).version()
    # A second folder (a restart) finds nothing new: the fold's transaction says so.
    assert committed.CommitFolder(cfgs["folded"]).fold() == 0
    assert DeltaTable(str(roots["folded"] / "committed_offsets")).version() == version
    # The next append deletes the rows of the batches folded.
    folder.stage(_batch(rng, keys), batch_id)
    left = DeltaTable(str(roots["folded"] / "committed_changes")).to_pyarrow_table()
    assert set(left.column("batch_id").to_pylist()) == {batch_id}


def test_a_batch_appended_before_a_crash_is_folded_not_merged_again(tmp_path: Path) -> None:
    """A run appended batch 3's commits and died before the batch ended; the next run (which
    MERGEs at once) replays batch 3: the pending rows are folded first and the replay's
    MERGE is skipped, so the commits count once."""
    cfg = config.load(None, env={}, overrides=[f"delta.root={tmp_path}"])
    for table in (tables.COMMITTED_OFFSETS, tables.COMMITTED_CHANGES):
        _create(tmp_path, table)
    rows = _batch(random.Random(1), [("g", "t", p) for p in range(4)])
    committed.CommitFolder(cfg).stage(rows, 3)
    restarted = committed.CommitFolder(cfg)
    restarted.merge_newest(rows, 3)
    once = tmp_path / "once"
    once_cfg = config.load(None, env={}, overrides=[f"delta.root={once}"])
    for table in (tables.COMMITTED_OFFSETS, tables.COMMITTED_CHANGES):
        _create(once, table)
    committed.merge_newest(once_cfg, rows, 3)
    assert _table_rows(tmp_path / "committed_offsets") == _table_rows(once / "committed_offsets")
    # The next batch of the restarted run is not a replay: MERGEd.
    more = _batch(random.Random(2), [("g", "t", p) for p in range(4)])
    restarted.merge_newest(more, 4)
    committed.merge_newest(once_cfg, more, 4)
    assert _table_rows(tmp_path / "committed_offsets") == _table_rows(once / "committed_offsets")
