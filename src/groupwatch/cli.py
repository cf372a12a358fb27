"""The ``groupwatch`` command line.

Each subcommand lives in the module that owns its domain and is imported only when it is run,
so ``groupwatch decode`` never pays for importing Spark.  A subcommand module exposes
``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "decode": ("groupwatch.protocol.command", "decode __consumer_offsets records (JSON lines)"),
    "analyze": ("groupwatch.detect.command", "find wrong assignments in decoded group metadata"),
    "assign": ("groupwatch.assignor.command", "re-run Kafka's sticky assignors on a JSON input"),
    "run": ("groupwatch.job.command", "run the streaming job (Kafka -> decode -> Delta)"),
    "broker": ("groupwatch_dev.broker.command", "start/stop/status of the local KRaft broker"),
    "config": ("groupwatch.config_command", "print the effective configuration"),
    "dashboard": ("groupwatch.dashboard.command", "serve the read-only web dashboard"),
    "notify": ("groupwatch.notify.command", "evaluate alert rules over the findings table"),
    "lag": ("groupwatch.lag.command", "print consumer lag per partition (partition_lag)"),
}


def _build_parser(argv: Sequence[str]) -> tuple[argparse.ArgumentParser, str | None]:
    parser = argparse.ArgumentParser(
        prog="groupwatch",
        description="Is every Kafka consumer group's partition assignment correct right now?",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(p)
    return parser, chosen


def main(argv: Sequence[str] | None = None) -> int:
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
    raise SystemExit(main())
