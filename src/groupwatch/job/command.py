"""``groupwatch run``: start the streaming job locally (``--once`` to catch up and exit)."""

from __future__ import annotations

import argparse
import logging
import sys

from groupwatch import config as config_mod


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--conf`` and ``--set``, shared by every command that reads the configuration."""
    parser.add_argument(
        "--conf", default=None, help=f"TOML configuration (default: {config_mod.DEFAULT_CONF})"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one configuration key (repeatable)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument(
        "--once",
        action="store_true",
        help="process everything available now, then exit (Spark's available-now trigger)",
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # py4j logs every callback at INFO; the job's own lines are what an operator reads.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        cfg = config_mod.load(args.conf, overrides=args.overrides)
    except config_mod.ConfigError as exc:
        print(f"groupwatch run: {exc}", file=sys.stderr)
        return 2
    from groupwatch.job.runner import run_job

    return run_job(cfg, once=args.once)
