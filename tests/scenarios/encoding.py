"""Decoded lines -> raw records (key/value bytes), through the decoder's encoder (issue 3).

This is the only place the scenario library touches the encoder; until it lands,
:func:`encode_line` says so.
"""

from __future__ import annotations

import importlib
from typing import Any


class EncoderUnavailable(RuntimeError):
    """The decoder's encoder (issue 3) is not importable yet."""


def encode_line(line: dict[str, Any]) -> dict[str, Any]:
    """One ``groupwatch decode`` output line -> ``{"key", "value" (base64), position...}``."""
    try:
        protocol: Any = importlib.import_module("groupwatch.protocol")
    except ImportError as exc:
        raise EncoderUnavailable("groupwatch.protocol (issue 3) is not there yet") from exc
    encode = getattr(protocol, "encode_json_line", None)
    if encode is None:
        raise EncoderUnavailable("groupwatch.protocol has no encode_json_line(line) yet")
    out: dict[str, Any] = encode(line)
    return out
