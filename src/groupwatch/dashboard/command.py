"""``groupwatch dashboard``: serve the read-only web dashboard over the Delta tables.

Served by waitress, a production WSGI server (Flask's own server is meant for development and
says so at start-up), on this machine only unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import logging

from groupwatch import config_cli

#: Request threads: the pages read cached tables, so a few serve a team.
THREADS = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_cli.add_arguments(parser)
    parser.add_argument("--delta-root", help="read the tables here instead of delta.root")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8050, help="port (default 8050)")
    parser.add_argument(
        "--refresh",
        type=int,
        default=10,
        metavar="SECONDS",
        help="auto-refresh interval of the pages (default 10)",
    )
    parser.add_argument(
        "--metrics-url",
        help="the job's Prometheus endpoint, shown on the "
        "Data health page, e.g. http://127.0.0.1:9464/metrics",
    )


def run(args: argparse.Namespace) -> int:
    from waitress import serve  # type: ignore[import-untyped]

    from groupwatch.dashboard.app import create_app
    from groupwatch.delta.read import DeltaStore

    config_cli.configure_logging(args.verbose)
    cfg = config_cli.load(args)
    root = args.delta_root or cfg.delta.root
    app = create_app(
        DeltaStore(root, cfg.storage),
        refresh_seconds=args.refresh,
        metrics_url=args.metrics_url,
        warm=True,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        logging.warning(
            "binding %s: the dashboard has no login; anyone who can reach this "
            "address can read the group metadata",
            args.host,
        )
    print(f"groupwatch dashboard on http://{args.host}:{args.port}/ (tables: {root})", flush=True)
    try:
        serve(app.server, host=args.host, port=args.port, threads=THREADS)
    except KeyboardInterrupt:
        pass
    return 0
