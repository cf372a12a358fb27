"""``docs/findings.md`` is generated from the catalogue; it must be current."""

from __future__ import annotations

from pathlib import Path

from groupwatch.detect.catalogue import CATALOGUE, KINDS
from groupwatch.detect.docs import render

DOC = Path(__file__).resolve().parents[3] / "docs" / "findings.md"


def test_findings_doc_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/findings.md is stale: run `python -m groupwatch.detect.docs docs/findings.md`"
    )


def test_catalogue_is_the_contract() -> None:
    assert {k.name: k.severity for k in CATALOGUE} == {
        "assignment_overlap": "critical",
        "owned_overlap_same_generation": "critical",
        "cooperative_revocation_violation": "critical",
        "unsubscribed_assignment": "critical",
        "stale_owned_partitions": "warning",
        "stale_claim_honored": "warning",
        "unassigned_partitions": "warning",
        "imbalanced_assignment": "warning",
        "userdata_mismatch": "warning",
        "sticky_divergence": "info",
        "protocol_version_mix": "info",
        "decode_error": "error",
        "generation_regression": "warning",
        "rebalance_storm": "warning",
        "generation_churn_stable_membership": "warning",
    }
    assert len(KINDS) == len(CATALOGUE)
