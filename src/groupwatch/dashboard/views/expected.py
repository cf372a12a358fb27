"""The expected assignment beside the actual one, for a classic generation with a critical
finding: what the sticky assignors compute from the members' own subscriptions, claims and
claim generations (:mod:`groupwatch.assignor`, the same re-run the detectors use).

A ``sticky_divergence`` finding's evidence already holds the difference; without one (the
re-run was not comparable to the leader's, an old client's say) the page still shows what a
correct generation-aware leader gives, computed here from the member rows of the generation."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.assignor.model import PROTOCOLS, AssignorError, MemberSubscription, TopicPartition
from groupwatch.assignor.sticky import assign
from groupwatch.dashboard import modern
from groupwatch.dashboard.frames import evidence, fmt_tps, tp_pairs

COLUMNS = ["member", "actual", "expected", "actual_only", "expected_only"]


def _rows(members: pd.DataFrame, group: str, generation: int | None) -> pd.DataFrame:
    m = members[(members["group"] == group) & (modern.types(members) == modern.CLASSIC)]
    m = m[m["generation"] == generation]
    if m.empty:
        return m
    newest = m.sort_values(["source_timestamp", "source_offset"]).iloc[-1]
    return m[
        (m["source_partition"] == newest["source_partition"])
        & (m["source_offset"] == newest["source_offset"])
    ]


def expected_beside_actual(
    members: pd.DataFrame,
    findings: pd.DataFrame,
    snapshots: pd.DataFrame,
    group: str,
    generation: int | None,
) -> pd.DataFrame:
    """Per member of ``generation``: its actual assignment, the expected one and the
    difference; empty unless the generation has a critical finding."""
    f = findings[(findings["group"] == group) & (findings["generation"] == generation)]
    if generation is None or not (f["severity"] == "critical").any():
        return pd.DataFrame(columns=COLUMNS)
    rows = _rows(members, group, generation)
    if rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    actual = {str(r["member_id"]): set(tp_pairs(r["assignment"])) for _, r in rows.iterrows()}
    expected = _from_evidence(f, actual)
    if expected is None:
        expected = _rerun(rows, snapshots, group, generation)
    if expected is None:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    for member, got in actual.items():
        want = expected.get(member, set())
        out.append(
            {
                "member": member,
                "actual": fmt_tps(got),
                "expected": fmt_tps(want),
                "actual_only": fmt_tps(got - want),
                "expected_only": fmt_tps(want - got),
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def _from_evidence(
    f: pd.DataFrame, actual: dict[str, set[tuple[str, int]]]
) -> dict[str, set[tuple[str, int]]] | None:
    """The expected assignment a ``sticky_divergence`` finding's evidence gives, if any."""
    div = f[f["kind"] == "sticky_divergence"]
    if div.empty:
        return None
    diff = evidence(div.iloc[0]["evidence"]).get("members") or {}
    out = {}
    for member, got in actual.items():
        d = diff.get(member) or {}
        out[member] = (got - set(tp_pairs(d.get("actual_only")))) | set(
            tp_pairs(d.get("expected_only"))
        )
    return out


def _rerun(
    rows: pd.DataFrame, snapshots: pd.DataFrame, group: str, generation: int
) -> dict[str, set[tuple[str, int]]] | None:
    """The sticky assignor over the generation's members, in their rows' order; partition
    counts from the partitions the members were assigned or claimed (the tables hold no
    other count for a classic group)."""
    snaps = snapshots[(snapshots["group"] == group) & (snapshots["generation"] == generation)]
    protocol = None if snaps.empty else snaps.iloc[-1]["protocol"]
    if protocol not in PROTOCOLS:
        return None
    counts: dict[str, int] = {}
    subs = []
    for _, r in rows.iterrows():
        owned = tp_pairs(r["claim"])
        for t, p in owned + tp_pairs(r["assignment"]):
            counts[t] = max(counts.get(t, 0), p + 1)
        cgen = r["claim_generation"]
        subs.append(
            MemberSubscription(
                member_id=str(r["member_id"]),
                topics=tuple(r["topics"] if r["topics"] is not None else ()),
                owned_partitions=tuple(TopicPartition(t, p) for t, p in owned),
                generation=None if pd.isna(cgen) or int(cgen) < 0 else int(cgen),
            )
        )
    try:
        result = assign(str(protocol), counts, subs)
    except AssignorError:
        return None
    return {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in result.assignment.items()}
