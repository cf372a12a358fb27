"""``groupwatch analyze``: the findings engine over records (:mod:`groupwatch.analyze`)
with the job's thresholds: the ``[detect]`` and ``[lag]`` sections of the same configuration
(``--conf``, ``--set detect.KEY=VALUE``, the environment), so ``analyze`` and the job
configured alike judge alike."""

from __future__ import annotations

import argparse

from groupwatch import analyze, config_cli


def add_arguments(parser: argparse.ArgumentParser) -> None:
    analyze.add_arguments(parser)
    config_cli.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    config_cli.configure_logging(args.verbose)
    configured = config_cli.load(args)
    return analyze.run(args, configured.detect.detector(), configured.lag.rules())
