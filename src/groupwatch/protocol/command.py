"""``groupwatch decode [FILE|-]``: JSON lines of base64 records in, decoded JSON lines out.

Input line: ``{"key": <base64>, "value": <base64 or null>, "topic"?, "partition"?, "offset"?,
"timestamp"?}``.  Exactly one output line per input line, in order, and exit status 0 even for
bad records: a line that is not JSON, or has bad base64, still yields a line, with its error.

The record's topic picks its record types: ``__share_group_state`` has its own (its ids 0 and 1
are share-partition snapshots and updates), every other topic is read as ``__consumer_offsets``.
``--topic NAME`` names the topic of lines that do not carry one (a dump of
``__share_group_state`` made without it, say); a line's own topic always wins.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from groupwatch.protocol.errors import DecodeError
from groupwatch.protocol.jsonview import error_json, to_json_dict
from groupwatch.protocol.records import decode_record

_CONTEXT = ("topic", "partition", "offset", "timestamp")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", nargs="?", default="-", help="JSON-lines file of records (default: standard input)"
    )
    add_topic_argument(parser)


def add_topic_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topic",
        metavar="NAME",
        help="the topic of input lines that name none (default: __consumer_offsets); "
        "__share_group_state reads the share coordinator's records",
    )


def run(args: argparse.Namespace) -> int:
    topic = getattr(args, "topic", None)
    if args.file == "-":
        _write(decode_lines(sys.stdin, topic), sys.stdout)
    else:
        with open(args.file, encoding="utf-8") as f:
            _write(decode_lines(f, topic), sys.stdout)
    return 0


def _write(lines: Iterable[str], out: IO[str]) -> None:
    for line in lines:
        out.write(line)
        out.write("\n")
    out.flush()


def decode_lines(lines: Iterable[str], topic: str | None = None) -> Iterator[str]:
    for line in lines:
        yield json.dumps(decode_line(line, topic), separators=(",", ":"))


def _bad_line(kind: str, message: str, context: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(context.get("topic"), str):
        out["topic"] = context["topic"]
    for name in ("partition", "offset", "timestamp"):
        value = context.get(name)
        out[name] = value if isinstance(value, int) and not isinstance(value, bool) else None
    out.update(
        {
            "record_type": "unknown",
            "record_type_id": None,
            "group": None,
            "tombstone": False,
            "key": None,
            "value": None,
            "error": error_json(DecodeError(kind, message)),
        }
    )
    return out


def _b64(obj: dict[str, Any], name: str) -> bytes | None:
    text = obj.get(name)
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f'"{name}" must be a base64 string or null')
    return base64.b64decode(text, validate=True)


def decode_line(line: str, topic: str | None = None) -> dict[str, Any]:
    """One input line -> one output object; never raises.  ``topic``: the topic of a line that
    names none."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return _bad_line("invalid_input", f"not JSON: {exc}", {})
    if not isinstance(obj, dict):
        return _bad_line("invalid_input", "a line must be a JSON object", {})
    context = {name: obj.get(name) for name in _CONTEXT}
    if context["topic"] is None:
        context["topic"] = topic
    for name in ("partition", "offset", "timestamp"):
        v = context[name]
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            return _bad_line("invalid_input", f'"{name}" must be an integer', context)
    if context["topic"] is not None and not isinstance(context["topic"], str):
        return _bad_line("invalid_input", '"topic" must be a string', context)
    try:
        key = _b64(obj, "key")
        value = _b64(obj, "value")
    except TypeError as exc:
        return _bad_line("invalid_input", str(exc), context)
    except (binascii.Error, ValueError) as exc:
        return _bad_line("invalid_base64", f"bad base64: {exc}", context)
    return to_json_dict(decode_record(key, value, **context))
