"""How every subcommand takes its configuration: one ``--conf``, one ``--set``, one ``--verbose``.

A subcommand calls :func:`load` and :func:`referenced_file`; both raise
:class:`~groupwatch.config.ConfigError`, which ``groupwatch``'s ``main`` turns into one line on
stderr and exit code 2, the same for every subcommand.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from groupwatch import config as config_mod
from groupwatch.config import Config, ConfigError

#: Libraries that log their internals at INFO (Great Expectations registers ~200 functions at
#: import, py4j reports every callback, the Kafka clients every reconnect). Quiet unless
#: ``--verbose``; their warnings and errors still show.
THIRD_PARTY = ("great_expectations", "py4j", "kafka", "urllib3", "waitress")


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also log the third-party libraries' details (Great Expectations, py4j, Kafka)",
    )


def load(args: argparse.Namespace) -> Config:
    """The configuration the arguments name (file, environment, ``--set``)."""
    return config_mod.load(args.conf, overrides=args.overrides)


def referenced_file(key: str, value: str, *, hint: str = "") -> Path:
    """The file a configuration key names; a missing one is a :class:`ConfigError` naming the
    key (relative paths are read from the current directory, as the message says)."""
    path = Path(value)
    if not path.exists():
        where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
        raise ConfigError(f"{key}: {value} does not exist{where}{hint}")
    return path


def _third_party(name: str) -> bool:
    return any(name == lib or name.startswith(lib + ".") for lib in THIRD_PARTY)


class _QuietThirdParty(logging.Filter):
    """Drops third-party records below WARNING at the handler: a library module may set its
    own logger's level at import (Great Expectations does), after ours was set."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not _third_party(record.name)


def configure_logging(verbose: bool) -> None:
    """INFO for groupwatch's own lines; third-party libraries at WARNING unless ``verbose``."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("groupwatch").setLevel(logging.INFO)
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, _QuietThirdParty)]:
            handler.removeFilter(old)
        if not verbose:
            handler.addFilter(_QuietThirdParty())
