"""``groupwatch lag [--conf FILE] [--set ...] [--group G ...] [--json]``: the current
``partition_lag`` rows and the share partitions of ``share_partition_state``, read from the
Delta tables with delta-rs (no Spark), as the dashboard reads them.

Every row says its group's type (``group_type``: ``classic``, ``consumer``, ``streams`` or
``share``, Kafka's names): a share group's rows come from its share state (share lag, KIP-1226),
the others' from their committed offsets; a committed-offset group's type is its newest
``group_snapshots`` row's (classic where none says otherwise)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any

from groupwatch import config_cli
from groupwatch.config import StorageConfig
from groupwatch.detect.lag.judge import duration
from groupwatch.tables import PARTITION_LAG

#: The table's columns, in order (``docs/tables.md``, ``partition_lag``).
COLUMNS = tuple(c.name for c in PARTITION_LAG.columns)
#: A share partition's columns of ``share_partition_state`` a row adds (null on the others).
SHARE_COLUMNS = (
    "start_offset",
    "delivery_complete_count",
    "in_flight_records",
    "archived_records",
    "max_delivery_count",
)
#: Every row's keys: the table's columns, the group's type, the share columns.
KEYS = (*COLUMNS, "group_type", *SHARE_COLUMNS)
SHARE = "share"
CLASSIC = "classic"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_cli.add_arguments(parser)
    parser.add_argument("--delta-root", help="read the tables here instead of delta.root")
    parser.add_argument(
        "--group", action="append", default=[], metavar="G", help="only this group (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="JSON lines, the table's columns")


def _plain(value: Any) -> Any:
    """A cell as JSON: timestamps as ISO-8601 UTC."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return value


def rows(
    root: str, groups: list[str], storage: StorageConfig | None = None
) -> list[dict[str, Any]]:
    """The ``partition_lag`` rows and the share partitions, by group, topic and partition
    (pyarrow, not pandas: the integers of a column with nulls stay integers)."""
    from groupwatch.delta.read import DeltaStore

    store = DeltaStore(root, storage)
    wanted = set(groups)
    lag = [r for r in _table(store, "partition_lag") if not wanted or r.get("group") in wanted]
    types = _group_types(store, {str(r.get("group")) for r in lag}) if lag else {}
    out = [
        {
            **{c: _plain(rec.get(c)) for c in COLUMNS},
            "group_type": types.get(str(rec.get("group")), CLASSIC),
            **dict.fromkeys(SHARE_COLUMNS),
        }
        for rec in lag
    ]
    for rec in _table(store, "share_partition_state"):
        if wanted and rec.get("group") not in wanted:
            continue
        row: dict[str, Any] = dict.fromkeys(KEYS)
        row.update(
            group=rec.get("group"),
            # A topic the brokers have not named yet is shown by its id.
            topic=rec.get("topic") or rec.get("topic_id"),
            partition=rec.get("partition"),
            end_offset=rec.get("end_offset"),
            lag_records=rec.get("lag_records"),
            observed_at=_plain(rec.get("end_observed_at") or rec.get("observed_at")),
            group_type=SHARE,
            **{c: rec.get(c) for c in SHARE_COLUMNS},
        )
        out.append(row)
    out.sort(key=lambda r: (r["group"] or "", r["topic"] or "", r["partition"] or 0))
    return out


def _table(store: Any, name: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """A table's rows (none if it does not exist yet)."""
    from deltalake.exceptions import TableNotFoundError

    if store.version(name) is None:
        return []
    try:
        rows: list[dict[str, Any]] = (
            store.open_table(name).to_pyarrow_table(columns=columns).to_pylist()
        )
    except (TableNotFoundError, FileNotFoundError):
        return []
    return rows


def _group_types(store: Any, groups: set[str]) -> dict[str, str]:
    """The type of each of ``groups`` with a typed ``group_snapshots`` row (KIP-848 and
    streams groups: classic rows leave ``group_type`` null), by its newest such row."""
    typed = _table(store, "group_snapshots", ["group", "group_type", "source_offset"])
    newest: dict[str, tuple[int, str]] = {}
    for r in typed:
        g, t, at = r.get("group"), r.get("group_type"), r.get("source_offset")
        if g not in groups or not t:
            continue
        pos = -1 if at is None else int(at)
        if g not in newest or pos >= newest[g][0]:
            newest[g] = (pos, str(t))
    return {g: t for g, (_, t) in newest.items()}


def _text(r: dict[str, Any]) -> str:
    records = "?" if r["lag_records"] is None else f"{r['lag_records']:,}"
    if r["group_type"] == SHARE:
        return (
            f"{r['group']}\t{r['topic']}-{r['partition']}\tshare\t{records} records\t"
            f"start {r['start_offset']}, in flight {r['in_flight_records']}, "
            f"archived {r['archived_records']}"
        )
    seconds = r["lag_seconds"]
    if seconds is None:
        behind = "?"
    else:
        behind = ("≥ " if r["lag_seconds_at_least"] else "") + duration(seconds * 1000)
    owner = r["owner_member"] or "-"
    if r["owner_client"]:
        owner += f" ({r['owner_client']})"
    stale = " stale" if r.get("stale") else ""
    return (
        f"{r['group']}\t{r['topic']}-{r['partition']}\t{r['status']}{stale}\t"
        f"{records} records\t{behind}\t{owner}"
    )


def run(args: argparse.Namespace) -> int:
    config_cli.configure_logging(args.verbose)
    cfg = config_cli.load(args)
    found = rows(args.delta_root or cfg.delta.root, list(args.group), cfg.storage)
    for r in found:
        print(json.dumps(r, ensure_ascii=False) if args.json else _text(r))
    if not found:
        print(
            "groupwatch lag: no partition_lag rows and no share_partition_state rows "
            "(has the job polled yet?)",
            file=sys.stderr,
        )
    return 0
