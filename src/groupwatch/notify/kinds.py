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

#: The lag findings (issue 30's contract), each with the partition status it reports.  The
#: catalogue is their source of truth; these are what the notifier knows of them when the
#: catalogue does not (yet) declare them, so alert rules may name them either way.
LAG_KINDS: dict[str, tuple[str, str, str]] = {
    "consumer_stopped": (
        "error",
        "stopped",
        "The group has not committed this partition for lag.stop_seconds while records wait: "
        "its owner has stopped consuming it (crashed, hung, or paused).",
    ),
    "consumer_stalled": (
        "warning",
        "stalled",
        "The group keeps committing this partition but its offset does not move while records "
        "wait: its owner is stuck on one record (a poison message, a retry loop).",
    ),
    "offset_rewound": (
        "warning",
        "rewound",
        "The committed offset went backwards outside a rebalance or a reset the group did "
        "itself: records will be consumed again.",
    ),
    "consumer_lagging": (
        "warning",
        "lagging",
        "The oldest unconsumed record of this partition is older than lag.warn_seconds and the "
        "lag grew over the window: the owner consumes slower than the producers write.",
    ),
}
#: A lag finding's kind -> the partition status (``partition_lag.status``) it reports.
LAG_STATUS: dict[str, str] = {kind: status for kind, (_, status, _) in LAG_KINDS.items()}

#: kind -> (severity, one-line explanation)
KINDS: dict[str, tuple[str, str]] = {
    **{kind: (sev, why) for kind, (sev, _, why) in LAG_KINDS.items()},
    **{k.name: (k.severity, k.explanation) for k in CATALOGUE},
}


def explanation_of(kind: str) -> str:
    return KINDS[kind][1] if kind in KINDS else ""


def rank(severity: str | None) -> int:
    """Sort key: critical first, unknown severities after info, healthy last."""
    if severity is None or severity == HEALTHY:
        return len(SEVERITIES) + 1
    return RANK.get(severity, len(SEVERITIES))
