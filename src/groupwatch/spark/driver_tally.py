"""What a micro-batch brings to the driver: rows and bytes, by what they are for.

A job meant to spread a fleet over a cluster must not gather the fleet on one machine; a
batch's log line says what it collected (its records for the driver's Python stage, its
commits, its output for the driver's writes, state, the notifier's rows), so a collect that
grows with the fleet rather than with the batch shows in the log of a live run.

The tally is the batch thread's (a context variable set by :func:`batch`): the lag poll and the
upkeep thread run in threads of their own, and their reads are not a batch's.  A collect
outside a batch (start-up, a test) counts nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

_current: contextvars.ContextVar[DriverTally | None] = contextvars.ContextVar(
    "groupwatch_driver_tally", default=None
)

T = TypeVar("T")


@dataclass
class DriverTally:
    """Rows and bytes (Arrow's buffers, whole) collected to the driver in one batch, per purpose."""

    parts: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, what: str, rows: int, nbytes: int) -> None:
        had_rows, had_bytes = self.parts.get(what, (0, 0))
        self.parts[what] = (had_rows + rows, had_bytes + nbytes)

    @property
    def rows(self) -> int:
        return sum(r for r, _ in self.parts.values())

    @property
    def nbytes(self) -> int:
        return sum(b for _, b in self.parts.values())

    def line(self) -> str:
        """``to the driver 1,204 rows 310.2 KB (records 1,000 290.0 KB, ...)``, or
        ``to the driver nothing``."""
        if not self.parts:
            return "to the driver nothing"
        parts = sorted(self.parts.items())
        each = ", ".join(f"{what} {rows:,} {_size(nbytes)}" for what, (rows, nbytes) in parts)
        return f"to the driver {self.rows:,} rows {_size(self.nbytes)} ({each})"


def _size(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1024 * 1024:
        return f"{nbytes / 1024:.1f} KB"
    return f"{nbytes / (1024 * 1024):.1f} MB"


@contextlib.contextmanager
def batch() -> Iterator[DriverTally]:
    """The tally of the batch run inside (on this thread)."""
    tally = DriverTally()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)


def arrow(what: str, table: pa.Table) -> pa.Table:
    """``table``, collected to the driver for ``what``, counted in the batch's tally."""
    tally = _current.get()
    if tally is not None:
        # The buffers' whole sizes, not ``nbytes``, which follows the list columns' offsets:
        # on a batch's output as ``toArrow`` gave it (pyarrow 22), ``nbytes`` of the findings
        # column (lists of structs of lists) ended the driver in a segmentation fault, where
        # the same table read back from an IPC stream did not.
        tally.add(what, table.num_rows, table.get_total_buffer_size())
    return table


def rows(what: str, collected: list[T]) -> list[T]:
    """Rows collected as Spark ``Row``s for ``what`` (small answers: group names), counted
    without their bytes (Spark gives none for them)."""
    tally = _current.get()
    if tally is not None:
        tally.add(what, len(collected), 0)
    return collected
