"""One group's saved state between micro-batches, as the ``group_state`` table holds it.

:func:`groupwatch.processing.process_group` takes a group's :class:`SavedGroupState` from the
previous batch and returns the next one; the Spark layer stores it as text
(:meth:`SavedGroupState.encode`) and reads it back (:meth:`SavedGroupState.decode`).

The text is the JSON object the job wrote before this type existed, byte for byte (keys
sorted, ``json.dumps``' default separators): rows already in ``group_state`` load unchanged,
and a state that did not change is saved as the same text.  That layout is version 1 and
carries no version key; a later layout writes ``"v"`` and :meth:`SavedGroupState.decode` reads
both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from groupwatch.detect import GroupState
from groupwatch.detect.share.state import SavedShare
from groupwatch.errors import GroupwatchError
from groupwatch.rows import classic_ownership, modern_ownership
from groupwatch.rows.classic_ownership import OpenIntervals
from groupwatch.rows.modern_ownership import ModernIntervals

#: The layout :meth:`SavedGroupState.encode` writes.
VERSION = 1
#: The layouts :meth:`SavedGroupState.decode` reads.
_READS = (VERSION,)
#: Every key of a version 1 text.  ``ownership`` and ``detect`` are always written;
#: ``modern_ownership`` only while a modern group holds partitions, ``last_generation`` only
#: between a classic group's snapshot and its tombstone, ``last_event_ms`` once the group had a
#: record other than an offset commit, ``share`` once a share group's ``__share_group_state``
#: records showed a share partition (so a group with none is saved as before).
_KEYS = frozenset(
    {"detect", "ownership", "modern_ownership", "last_generation", "last_event_ms", "share"}
)


class GroupStateError(GroupwatchError, ValueError):
    """A saved group state that does not read as one (raised from its cause)."""


@dataclass(frozen=True)
class SavedGroupState:
    """What one group carries from one micro-batch to the next."""

    version: ClassVar[int] = VERSION

    #: The findings engine's state of the group (``None`` until the engine has seen it).
    detect: GroupState | None = None
    #: The classic ownership intervals still open, by "partition/topic".
    ownership: OpenIntervals = field(default_factory=dict)
    #: A modern group's ownership intervals still open: member id -> "partition/slot id" ->.
    modern_ownership: ModernIntervals = field(default_factory=dict)
    #: The last classic generation seen; ``None`` before the first and after a tombstone (a
    #: deletion closes the intervals at the generation after it).
    last_generation: int | None = None
    #: Source time (ms) of the group's newest record other than an offset commit.
    last_event_ms: int | None = None
    #: A share group's share partitions (from ``__share_group_state``) and the share findings
    #: raised that could come again: a restarted job does not raise them twice.
    share: SavedShare | None = None

    def encode(self) -> str:
        """The state as ``group_state`` stores it (version 1: no version key)."""
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> SavedGroupState:
        """The state :meth:`encode` wrote, or a version it reads; :class:`GroupStateError` on
        anything else."""
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise GroupStateError(f"not a saved group state: {e}") from e
        return cls.from_json(doc)

    def to_json(self) -> dict[str, Any]:
        """The JSON-able value :meth:`encode` writes."""
        doc: dict[str, Any] = {
            "detect": None if self.detect is None else self.detect.to_json(),
            "ownership": classic_ownership.encode(self.ownership),
        }
        if self.modern_ownership:
            doc["modern_ownership"] = modern_ownership.encode(self.modern_ownership)
        if self.last_generation is not None:
            doc["last_generation"] = self.last_generation
        if self.last_event_ms is not None:
            doc["last_event_ms"] = self.last_event_ms
        if self.share is not None:
            doc["share"] = self.share.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> SavedGroupState:
        """The state of :meth:`to_json`'s value (or a version it reads), whatever carried it;
        :class:`GroupStateError` on anything else."""
        try:
            if not isinstance(doc, dict):
                raise TypeError(f"a JSON {type(doc).__name__}, not an object")
            version = doc.get("v", 1)
            if version not in _READS:
                raise ValueError(f"unknown version {version!r} (reads {list(_READS)})")
            unknown = sorted(set(doc) - _KEYS - {"v"})
            if unknown:
                # A newer layout's field this one would drop on saving: refuse instead.
                raise ValueError(f"unknown keys {unknown}")
            detect = doc.get("detect")
            share = doc.get("share")
            return cls(
                detect=None if detect is None else GroupState.from_json(detect),
                ownership=classic_ownership.decode(doc.get("ownership") or {}),
                modern_ownership=modern_ownership.decode(doc.get("modern_ownership") or {}),
                last_generation=_int_or_none(doc, "last_generation"),
                last_event_ms=_int_or_none(doc, "last_event_ms"),
                share=None if share is None else SavedShare.from_json(share),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise GroupStateError(f"not a saved group state: {e}") from e


def _int_or_none(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{key} is {value!r}, not an integer")
    return value
