"""``groupwatch assign --input FILE.json|-``: run the sticky assignor on one group, print JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from groupwatch.assignor.jsonio import parse_input, result_to_json
from groupwatch.assignor.model import AssignorError
from groupwatch.assignor.sticky import assign


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        metavar="FILE.json",
        help="the group as JSON (see docs/assignor.md); - reads stdin",
    )


def run(args: argparse.Namespace) -> int:
    source = str(args.input)
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        print(f"groupwatch assign: cannot read {source}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"groupwatch assign: {source} is not valid JSON: {exc}", file=sys.stderr)
        return 2
    try:
        data = parse_input(doc)
        result = assign(
            data.protocol, data.partitions_per_topic, data.members, data.partition_racks
        )
    except AssignorError as exc:
        print(f"groupwatch assign: {exc}", file=sys.stderr)
        return 1
    json.dump(result_to_json(result), sys.stdout)
    sys.stdout.write("\n")
    return 0
