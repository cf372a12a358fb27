"""``groupwatch dashboard``: serve the read-only web dashboard over the Delta tables."""

from __future__ import annotations

import argparse
import logging

from groupwatch import config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", help="configuration file (default conf/local.toml)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one configuration key (repeatable)")
    parser.add_argument("--delta-root", help="read the tables here instead of delta.root")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8050, help="port (default 8050)")
    parser.add_argument("--refresh", type=int, default=10, metavar="SECONDS",
                        help="auto-refresh interval of the pages (default 10)")
    parser.add_argument("--metrics-url", help="the job's Prometheus endpoint, shown on the "
                        "Data health page, e.g. http://127.0.0.1:9464/metrics")


def run(args: argparse.Namespace) -> int:
    from groupwatch.dashboard.app import create_app
    from groupwatch.dashboard.store import DeltaStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    cfg = config.load(args.conf, overrides=args.set)
    root = args.delta_root or cfg.delta.root
    app = create_app(DeltaStore(root), refresh_seconds=args.refresh, metrics_url=args.metrics_url)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        logging.warning("binding %s: the dashboard has no login; anyone who can reach this "
                        "address can read the group metadata", args.host)
    print(f"groupwatch dashboard on http://{args.host}:{args.port}/ (tables: {root})",
          flush=True)
    app.run(host=args.host, port=args.port, debug=False)
    return 0
