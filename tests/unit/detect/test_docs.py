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
        "owned_overlap_without_generation": "critical",
        "cooperative_revocation_violation": "critical",
        "unsubscribed_assignment": "critical",
        "stale_owned_partitions": "warning",
        "stale_claim_honored": "warning",
        "unassigned_partitions": "warning",
        "subscribed_topic_missing": "info",
        "imbalanced_assignment": "warning",
        "userdata_mismatch": "warning",
        "sticky_divergence": "info",
        "protocol_version_mix": "info",
        "decode_error": "error",
        "newer_record_version": "info",
        "generation_regression": "warning",
        "rebalance_storm": "warning",
        "generation_churn_stable_membership": "warning",
        "rebalance_stuck": "error",
        "partition_owned_twice": "critical",
        "partition_assigned_and_pending": "critical",
        "handover_while_held": "critical",
        "handover_epoch_not_increased": "critical",
        "handover_epoch_not_increased_known": "warning",
        "member_state_inconsistent": "error",
        "member_state_unknown": "warning",
        "epoch_order_violation": "error",
        "epoch_regression": "error",
        "stable_member_off_target": "error",
        "target_overlap": "error",
        "assignment_outside_subscription": "warning",
        "revocation_overdue": "warning",
        "unreleased_too_long": "warning",
        "assignment_epoch_behind": "warning",
        "static_member_away_too_long": "warning",
        "topic_id_unresolved": "info",
        "share_records_archived": "warning",
        "share_partition_stalled": "error",
        "share_delivery_retries": "warning",
        "share_new_partition_records_skipped": "error",
        "task_active_twice": "critical",
        "task_active_and_standby": "error",
        "consumer_stopped": "error",
        "consumer_stalled": "warning",
        "offset_rewound": "warning",
        "consumer_lagging": "warning",
    }
    assert len(KINDS) == len(CATALOGUE)
