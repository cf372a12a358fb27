"""The engine's input error, in a module of its own so that the classic readers
(:mod:`~groupwatch.detect.events`, :mod:`~groupwatch.detect.decoded`) and the modern one
(:mod:`~groupwatch.detect.modern.adapt`, which they import) raise the same class."""

from __future__ import annotations

from groupwatch.errors import GroupwatchError


class ContractError(GroupwatchError, ValueError):
    """A record does not have the shape the engine needs (a group-metadata record without a
    group, an offset commit without a partition, a modern record whose field does not have the
    type Kafka gives it, a JSON line that is not ``decode`` output)."""
