"""The ``groupwatch`` command line.

Each subcommand lives in the module that owns its domain and is imported only when it is run,
so ``groupwatch decode`` never pays for importing Spark.  A subcommand module exposes
``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "decode": ("groupwatch.protocol.command", "decode __consumer_offsets records (JSON lines)"),
    "analyze": ("groupwatch.analyze_command", "find wrong assignments in decoded group metadata"),
    "assign": ("groupwatch.assignor.command", "re-run Kafka's sticky assignors on a JSON input"),
    "run": ("groupwatch.job.command", "run the streaming job (Kafka -> decode -> Delta)"),
    "broker": ("groupwatch_dev.broker.command", "start/stop/status of the local KRaft broker"),
    "config": ("groupwatch.config_command", "print the effective configuration"),
    "dashboard": ("groupwatch.dashboard.command", "serve the read-only web dashboard"),
    "notify": ("groupwatch.notify.command", "evaluate alert rules over the findings table"),
    "lag": ("groupwatch.lag.command", "print consumer lag per partition (partition_lag)"),
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def _build_parser(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, str | None]:
    parser = argparse.ArgumentParser(
        prog="groupwatch",
        description="Is every Kafka consumer group's partition assignment correct right now?",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen(argv)
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    return parser, chosen


def main(argv: Sequence[str] | None = None) -> int:
    try:
        result = _main(argv)
        # Flushed here, not at interpreter exit, so a reader gone early is seen as a BrokenPipeError
        # below rather than as a traceback printed while Python shuts down.
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    return result


#: Commands that end through the interpreter's own teardown: the job's Spark session, its lag
#: process and its other children stop through their shutdown hooks.
TEARDOWN_COMMANDS = frozenset({"run"})


def console() -> NoReturn:
    """The ``groupwatch`` console script: :func:`main`, then the process ends with its status.

    A pyarrow dataset over delta-rs's file system (``to_pyarrow_dataset``: the lag tables, a
    group's scanned rows) leaves a native thread that aborts the interpreter while it finalizes
    ("terminate called without an active exception", exit 134, after the command's output is
    complete: delta-io/delta-rs#2184), so ``groupwatch lag`` exited 134 on success and no script
    could trust its status.  Nothing these commands do waits for the interpreter's teardown, so
    once logging and both streams are flushed the process leaves at once; ``run`` keeps the
    ordinary exit (:data:`TEARDOWN_COMMANDS`).
    """
    argv = sys.argv[1:]
    code = main(argv)
    if _chosen(argv) in TEARDOWN_COMMANDS:
        sys.exit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader gone early was already answered with 141 by main()
    os._exit(code)


def _reader_gone() -> int:
    """The reader of standard output went away (``groupwatch config | head``): end quietly.

    What is still buffered for standard output can never be delivered; pointing the descriptor at
    /dev/null lets the interpreter's own flush at exit succeed instead of reporting the same error
    again.  141 is what a shell reports for a command ended by SIGPIPE (128 + 13).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 141


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser, chosen = _build_parser(args_list)
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    from groupwatch.config import ConfigError

    try:
        result: int = module.run(args)
    except ConfigError as exc:
        # The same for every subcommand: one line naming the key, exit 2 (like a usage error).
        print(f"groupwatch {args.command}: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    console()
