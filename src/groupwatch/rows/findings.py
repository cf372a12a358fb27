"""A finding as the ``findings`` table holds it (fields as ``groupwatch analyze`` prints)."""

from __future__ import annotations

import datetime as dt
import json

from groupwatch.detect import Finding
from groupwatch.detect.findings import tp_list
from groupwatch.tables import FindingRow


def finding_row(finding: Finding, detected_at: dt.datetime) -> FindingRow:
    """A finding as the ``findings`` table holds it (fields as ``groupwatch analyze`` prints)."""
    return FindingRow(
        finding_id=finding.finding_id,
        kind=finding.kind,
        severity=finding.severity,
        group=finding.group,
        generation=finding.generation,
        topic=finding.topic,
        partition=finding.partition,
        member=finding.member,
        members=list(finding.members),
        partitions=None if finding.partitions is None else tp_list(finding.partitions),
        detail=finding.detail,
        evidence=json.dumps(dict(finding.evidence), sort_keys=True, default=str),
        source=finding.source.to_dict(),
        detected_at=detected_at,
    )
