"""KIP-848 consumer groups, KIP-1071 streams groups and share groups: their state from the
records of ``__consumer_offsets`` and what is wrong with it (see :mod:`.judge` for when)."""

from groupwatch.detect.modern.adapt import ROLES, modern_record
from groupwatch.detect.modern.judge import on_record, quiesce, settle
from groupwatch.detect.modern.model import GroupType, ModernRecord, RecordRole
from groupwatch.detect.modern.state import ModernState

__all__ = [
    "ROLES",
    "GroupType",
    "ModernRecord",
    "ModernState",
    "RecordRole",
    "modern_record",
    "on_record",
    "quiesce",
    "settle",
]
