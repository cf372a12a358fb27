"""``groupwatch run``: start the streaming job locally (``--once`` to catch up and exit)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from groupwatch import config_cli
from groupwatch.config import Config, ConfigError

if TYPE_CHECKING:
    from groupwatch.notify import NotifierConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_cli.add_arguments(parser)
    parser.add_argument(
        "--once",
        action="store_true",
        help="process everything available now, then exit (Spark's available-now trigger)",
    )


def referenced_files(cfg: Config) -> NotifierConfig | None:
    """The files the configuration names, checked before Spark starts so a wrong path fails in
    a second; returns the alert rules (None when the notifier is off)."""
    from groupwatch.spark.validation import suite_files

    if cfg.validation.every_n_batches:
        suites = config_cli.referenced_file(
            "validation.suites",
            cfg.validation.suites,
            hint="; validation.every_n_batches=0 turns validation off",
        )
        if not suite_files(suites):
            raise ConfigError(
                f"validation.suites: no expectation suite (*.json) in {suites}; "
                "validation.every_n_batches=0 turns validation off"
            )
    if not cfg.alerts.rules:
        return None
    from groupwatch.notify import NotifyConfigError, load_config

    rules = config_cli.referenced_file(
        "alerts.rules", cfg.alerts.rules, hint='; alerts.rules="" runs without notifications'
    )
    try:
        return load_config(rules)
    except NotifyConfigError as exc:
        raise ConfigError(f"alerts.rules: {exc}") from None


def run(args: argparse.Namespace) -> int:
    config_cli.configure_logging(args.verbose)
    cfg = config_cli.load(args)
    notifier_config = referenced_files(cfg)
    from groupwatch.delta.read import check_location

    # Before Spark starts: a wrong secret, a missing bucket or an endpoint that does not
    # answer is one line (exit 2), and nothing is written anywhere.
    check_location(cfg.delta.root, cfg.storage, "delta.root")
    check_location(cfg.checkpoint.root, cfg.storage, "checkpoint.root")
    from groupwatch.job.runner import run_job

    return run_job(cfg, once=args.once, notifier_config=notifier_config, verbose=args.verbose)
