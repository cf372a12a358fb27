"""The finding kinds and severities, from the findings catalogue (``groupwatch.detect``).

This is the one adapter point between the catalogue and what people see: the dashboard and the
notifier take kinds, severities and explanations from here.  Until the catalogue module is
importable the kinds of the contract (issue 5) are listed here as a fallback.
"""

from __future__ import annotations

#: Most severe first; a lower rank is worse.
SEVERITIES: tuple[str, ...] = ("critical", "error", "warning", "info")
RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}
HEALTHY = "ok"

_FALLBACK: dict[str, tuple[str, str]] = {
    "assignment_overlap": ("critical", "A partition is in two or more members' assignments."),
    "owned_overlap_same_generation": (
        "critical",
        "Two or more members claim a partition with the same, highest, claim generation.",
    ),
    "cooperative_revocation_violation": (
        "critical",
        "A validly claimed partition is assigned to another member in the same generation.",
    ),
    "unsubscribed_assignment": ("critical", "A member is assigned a topic it does not subscribe."),
    "stale_owned_partitions": ("warning", "A member claims partitions with a stale generation."),
    "stale_claim_honored": ("warning", "A partition went to a member on a stale claim."),
    "unassigned_partitions": ("warning", "Partitions of a subscribed topic are assigned nobody."),
    "imbalanced_assignment": ("warning", "The assignment breaks Kafka's balance definition."),
    "userdata_mismatch": ("warning", "Sticky user data disagrees with owned_partitions."),
    "sticky_divergence": ("info", "The assignment differs from what the assignor computes."),
    "protocol_version_mix": ("info", "Members send different subscription versions."),
    "decode_error": ("error", "A record or a member's bytes could not be decoded."),
    "generation_regression": ("warning", "A generation lower than the last one seen."),
    "rebalance_storm": ("warning", "Too many generations within the window."),
    "generation_churn_stable_membership": (
        "warning",
        "Consecutive generations with the same members and assignment: a rebalance loop.",
    ),
}


def _load() -> dict[str, tuple[str, str]]:
    try:
        from groupwatch.detect import catalogue  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return dict(_FALLBACK)
    return {k.name: (k.severity, k.explanation) for k in catalogue.CATALOGUE}


KINDS: dict[str, tuple[str, str]] = _load()


def severity_of(kind: str, default: str = "warning") -> str:
    return KINDS[kind][0] if kind in KINDS else default


def explanation_of(kind: str) -> str:
    return KINDS[kind][1] if kind in KINDS else ""


def rank(severity: str | None) -> int:
    """Sort key: critical first, unknown severities after info, healthy last."""
    if severity is None or severity == HEALTHY:
        return len(SEVERITIES) + 1
    return RANK.get(severity, len(SEVERITIES))
