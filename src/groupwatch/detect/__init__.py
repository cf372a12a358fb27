"""The findings engine: what is wrong with each consumer group's assignment, record by record.

Pure Python (no Spark).  One :class:`Analyzer` drives :func:`step` over records in order for
``groupwatch analyze`` and for each group of the streaming job's batches.

* :func:`event_from_record` -- a decoded record (:class:`groupwatch.protocol.DecodedRecord`)
  -> an :data:`Event` (``None`` for records the engine does not use);
* :func:`event_from_decoded` -- the same from a ``groupwatch decode`` output object;
* :func:`step` -- ``(state | None, event, config) -> (state, findings)``, pure;
* :meth:`Analyzer.apply` -- one decoded record, and what the engine took it as
  (:class:`Applied`: its findings, a classic snapshot's converted members, a modern group's
  state after it), for the rows the job builds from it;
* :meth:`GroupState.dumps` / :meth:`GroupState.loads` -- the state as a JSON string;
* :meth:`Finding.to_dict` -- the ``groupwatch analyze`` / ``findings`` table shape.
"""

from groupwatch.detect.catalogue import CATALOGUE, KINDS, SEVERITIES, Kind, Severity
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.decoded import event_from_decoded
from groupwatch.detect.engine import (
    Analyzer,
    Applied,
    AppliedModern,
    AppliedShare,
    analyze_lines,
    event_from_line,
)
from groupwatch.detect.events import event_from_record
from groupwatch.detect.findings import Finding, Source, finding_id
from groupwatch.detect.model import (
    Event,
    GroupSnapshot,
    MemberState,
    OffsetCommit,
    Tick,
    Tombstone,
    UndecodableRecord,
)
from groupwatch.detect.state import GroupState, step

__all__ = [
    "CATALOGUE",
    "KINDS",
    "SEVERITIES",
    "Analyzer",
    "Applied",
    "AppliedModern",
    "AppliedShare",
    "DetectorConfig",
    "Event",
    "Finding",
    "GroupSnapshot",
    "GroupState",
    "Kind",
    "MemberState",
    "OffsetCommit",
    "Severity",
    "Source",
    "Tick",
    "Tombstone",
    "UndecodableRecord",
    "analyze_lines",
    "event_from_decoded",
    "event_from_line",
    "event_from_record",
    "finding_id",
    "step",
]
