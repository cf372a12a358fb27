"""``groupwatch lag [--conf FILE] [--set ...] [--group G ...] [--json]``: the current
``partition_lag`` rows, read from the Delta tables with delta-rs (no Spark), as the dashboard
reads them."""

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
    """The ``partition_lag`` rows, by group, topic and partition (pyarrow, not pandas: the
    integers of a column with nulls stay integers)."""
    from deltalake.exceptions import TableNotFoundError

    from groupwatch.deltaread import DeltaStore

    store = DeltaStore(root, storage)
    if store.version("partition_lag") is None:
        return []
    try:
        table = store.open_table("partition_lag").to_pyarrow_table()
    except (TableNotFoundError, FileNotFoundError):
        return []
    wanted = set(groups)
    out = [
        {c: _plain(rec.get(c)) for c in COLUMNS}
        for rec in table.to_pylist()
        if not wanted or rec.get("group") in wanted
    ]
    out.sort(key=lambda r: (r["group"] or "", r["topic"] or "", r["partition"] or 0))
    return out


def _text(r: dict[str, Any]) -> str:
    seconds = r["lag_seconds"]
    if seconds is None:
        behind = "?"
    else:
        behind = ("≥ " if r["lag_seconds_at_least"] else "") + duration(seconds * 1000)
    owner = r["owner_member"] or "-"
    if r["owner_client"]:
        owner += f" ({r['owner_client']})"
    records = "?" if r["lag_records"] is None else f"{r['lag_records']:,}"
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
        print("groupwatch lag: no partition_lag rows (has the job polled yet?)", file=sys.stderr)
    return 0
