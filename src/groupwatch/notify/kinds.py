"""The finding kinds and severities, from the findings catalogue (``groupwatch.detect``).

This is the one adapter point between the catalogue and what people see: the dashboard and the
notifier take kinds, severities and explanations from here, so a kind's text is written once.
"""

from __future__ import annotations

from groupwatch.detect.catalogue import CATALOGUE
from groupwatch.detect.catalogue import SEVERITIES as _CATALOGUE_SEVERITIES

#: Most severe first; a lower rank is worse.
SEVERITIES: tuple[str, ...] = tuple(_CATALOGUE_SEVERITIES)
RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}
HEALTHY = "ok"

#: kind -> (severity, one-line explanation)
KINDS: dict[str, tuple[str, str]] = {k.name: (k.severity, k.explanation) for k in CATALOGUE}


def explanation_of(kind: str) -> str:
    return KINDS[kind][1] if kind in KINDS else ""


def rank(severity: str | None) -> int:
    """Sort key: critical first, unknown severities after info, healthy last."""
    if severity is None or severity == HEALTHY:
        return len(SEVERITIES) + 1
    return RANK.get(severity, len(SEVERITIES))
