"""``groupwatch config``: print the effective configuration (secrets masked) as TOML-like text."""

from __future__ import annotations

import argparse
import json

from groupwatch import config as config_mod
from groupwatch import config_cli


def add_arguments(parser: argparse.ArgumentParser) -> None:
    config_cli.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    cfg = config_cli.load(args)
    for section, table in config_mod.to_dict(cfg).items():
        print(f"[{section}]")
        for key, value in table.items():
            print(f"{key} = {json.dumps(value)}")
        print()
    return 0
