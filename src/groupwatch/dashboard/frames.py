"""Cell values as delta-rs returns them: partition lists, evidence JSON, nulls."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

#: (topic, partition); for a streams group (subtopology, task).
TP = tuple[str, int]


def is_null(value: Any) -> bool:
    """``None`` or a float NaN (pandas' null in a numeric column); lists are never null."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def opt_int(value: Any) -> int | None:
    """An int column's value (pandas reads nullable ints as floats), or ``None``."""
    return None if is_null(value) else int(value)


def tp_pairs(value: Any) -> list[TP]:
    """``[{topic, partitions: [...]}]`` (as delta-rs returns it) as (topic, partition) pairs."""
    out: list[TP] = []
    if is_null(value):
        return out
    for item in list(value):
        if item is None:
            continue
        topic, parts = item.get("topic"), item.get("partitions")
        for p in list(parts) if parts is not None else []:
            out.append((str(topic), int(p)))
    return out


def fmt_tps(tps: Iterable[TP]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(tps))


def evidence(value: Any) -> dict[str, Any]:
    if not isinstance(value, str) or not value:
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return {"unparsed": value}
    return parsed if isinstance(parsed, dict) else {"value": parsed}
