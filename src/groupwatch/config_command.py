"""``groupwatch config``: print the effective configuration (secrets masked) as TOML-like text."""

from __future__ import annotations

import argparse
import json
import sys

from groupwatch import config as config_mod
from groupwatch.job.command import add_config_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        cfg = config_mod.load(args.conf, overrides=args.overrides)
    except config_mod.ConfigError as exc:
        print(f"groupwatch config: {exc}", file=sys.stderr)
        return 2
    for section, table in config_mod.to_dict(cfg).items():
        print(f"[{section}]")
        for key, value in table.items():
            print(f"{key} = {json.dumps(value)}")
        print()
    return 0
