"""``groupwatch notify``: evaluate the alert rules over the findings table."""

from __future__ import annotations

import argparse
import time

from groupwatch import config_cli
from groupwatch.config import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_cli.add_arguments(parser)
    parser.add_argument("--delta-root", help="read the tables here instead of delta.root")
    parser.add_argument("--rules", help="alert configuration (default: alerts.rules)")
    parser.add_argument(
        "--once", action="store_true", help="evaluate once, deliver, and exit (for cron and tests)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=30.0,
        help="seconds between evaluations when not --once (default 30)",
    )


def run(args: argparse.Namespace) -> int:
    from groupwatch.delta.read import DeltaStore
    from groupwatch.notify import Notifier, NotifyConfigError, load_config
    from groupwatch.notify.inputs import SNAPSHOT_COLUMNS, finding_of, lag_row_of, snapshot_of

    config_cli.configure_logging(args.verbose)
    cfg = config_cli.load(args)
    key, value = ("--rules", args.rules) if args.rules else ("alerts.rules", cfg.alerts.rules)
    if not value:
        raise ConfigError(f"{key} is empty: there are no alert rules to evaluate")
    try:
        rules = load_config(config_cli.referenced_file(key, value))
    except NotifyConfigError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    store = DeltaStore(args.delta_root or cfg.delta.root, cfg.storage)
    notifier = Notifier(rules)
    try:
        while True:
            # delta-rs reads pandas frames: their records become typed rows here, once.
            findings = [finding_of(r) for r in store.read("findings").to_dict("records")]
            # Months of group_snapshots: only the rows of groups an alert could open or
            # resolve for, only the columns it reads.
            groups = notifier.groups_to_resolve(findings)
            rows = (
                store.read_rows("group_snapshots", "group", groups, SNAPSHOT_COLUMNS)
                if groups
                else store.empty("group_snapshots")
            )
            snapshots = [snapshot_of(r) for r in rows.to_dict("records")]
            # The whole partition_lag table resolves lag alerts; none before the job writes it.
            lag = (
                [lag_row_of(r) for r in store.read("partition_lag").to_dict("records")]
                if store.version("partition_lag") is not None
                else None
            )
            events = notifier.process(findings, snapshots, lag, whole_lag=True)
            firing = sum(1 for e in events if e.status == "firing")
            print(
                f"notify: {firing} new alert(s), {len(events) - firing} resolved, "
                f"{len(notifier.active())} open",
                flush=True,
            )
            if args.once:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    finally:
        notifier.close(timeout=30.0)
    return 0
