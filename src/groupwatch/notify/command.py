"""``groupwatch notify``: evaluate the alert rules over the findings table."""

from __future__ import annotations

import argparse
import logging
import time

from groupwatch import config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", help="job configuration file, for delta.root")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--delta-root", help="read the tables here instead of delta.root")
    parser.add_argument("--rules", help="alert configuration (default conf/alerts.toml)")
    parser.add_argument("--once", action="store_true",
                        help="evaluate once, deliver, and exit (for cron and tests)")
    parser.add_argument("--interval", type=float, default=30.0,
                        help="seconds between evaluations when not --once (default 30)")


def run(args: argparse.Namespace) -> int:
    from groupwatch.dashboard.store import DeltaStore
    from groupwatch.notify import Notifier, load_config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    cfg = config.load(args.conf, overrides=args.set)
    store = DeltaStore(args.delta_root or cfg.delta.root)
    notifier = Notifier(load_config(args.rules))
    try:
        while True:
            findings = store.read("findings").to_dict("records")
            snapshots = store.read("group_snapshots").to_dict("records")
            events = notifier.process(findings, snapshots)
            firing = sum(1 for e in events if e.status == "firing")
            print(f"notify: {firing} new alert(s), {len(events) - firing} resolved, "
                  f"{len(notifier.active())} open", flush=True)
            if args.once:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    finally:
        notifier.close(timeout=30.0)
    return 0
