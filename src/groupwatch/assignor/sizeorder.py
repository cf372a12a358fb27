"""The general builder's ``sortedCurrentSubscriptions``: a ``TreeSet`` of members kept in
``SubscriptionComparator`` order (assignment size, then member id).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator


class MembersBySize:
    """Members ordered by (assignment size, member number), as Kafka's ``TreeSet``.

    The size is the one given to :meth:`add`; as in Kafka, a member whose assignment changes
    must be removed before the change and added back after it.  Members sit in one sorted
    bucket per size, so add and remove cost a bisection rather than a tree rebalance.
    """

    __slots__ = ("_buckets", "_sizes", "_size_of")

    def __init__(self) -> None:
        """An empty set."""
        self._buckets: dict[int, list[int]] = {}
        self._sizes: list[int] = []
        self._size_of: dict[int, int] = {}

    def add(self, member: int, size: int) -> None:
        """Insert ``member`` with ``size``; a member already present is left as it is."""
        if member in self._size_of:
            return
        self._size_of[member] = size
        bucket = self._buckets.get(size)
        if bucket is None:
            self._buckets[size] = [member]
            bisect.insort(self._sizes, size)
        else:
            bisect.insort(bucket, member)

    def remove(self, member: int) -> None:
        """Take ``member`` out (nothing happens if it is absent)."""
        size = self._size_of.pop(member, None)
        if size is None:
            return
        bucket = self._buckets[size]
        del bucket[bisect.bisect_left(bucket, member)]
        if not bucket:
            del self._buckets[size]
            del self._sizes[bisect.bisect_left(self._sizes, size)]

    def first(self) -> int:
        """The member with the fewest partitions (lowest id among equals)."""
        return self._buckets[self._sizes[0]][0]

    def last(self) -> int:
        """The member with the most partitions (highest id among equals)."""
        return self._buckets[self._sizes[-1]][-1]

    def __iter__(self) -> Iterator[int]:
        """Ascending order, as the ``TreeSet``'s iterator."""
        buckets = self._buckets
        for size in self._sizes:
            yield from buckets[size]

    def __len__(self) -> int:
        """How many members are in the set."""
        return len(self._size_of)
