"""Java's orderings, emulated: ``String.hashCode``, ``String.compareTo`` and ``HashMap`` iteration.

Kafka's sticky assignor iterates ``HashMap``/``HashSet`` instances in a few places where the
result depends on the order (reference §4.8).  Java 8+ ``HashMap`` keeps a power-of-two table;
a key sits in bucket ``spread(hash) & (capacity - 1)`` with ``spread(h) = h ^ (h >>> 16)``;
iteration walks buckets in index order and, inside a bucket, the nodes in the order they were
linked (insertion order; a resize splits a bucket without reordering it).  The table starts at
16 buckets, doubles when the size exceeds 0.75 × capacity and never shrinks.  A bucket that
reaches 9 nodes while the table is smaller than 64 forces a resize (``treeifyBin``).  Buckets
that are really turned into trees (≥ 9 colliding nodes with capacity ≥ 64) are not emulated:
their iteration order is still the insertion order here, which Java does not guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_MASK32 = 0xFFFFFFFF
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= _MASK32
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def _utf16_units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def string_hash(text: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as a signed int32."""
    h = 0
    if text.isascii():
        for ch in text.encode("ascii"):
            h = (31 * h + ch) & _MASK32
    else:
        units = _utf16_units(text)
        for i in range(0, len(units), 2):
            h = (31 * h + (units[i] << 8 | units[i + 1])) & _MASK32
    return to_int32(h)


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``TopicPartition.hashCode`` = ``31 * (31 + partition) + topic.hashCode()`` (int32)."""
    return to_int32(31 * (31 + partition) + topic_hash)


def spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low half (unsigned result)."""
    h &= _MASK32
    return h ^ (h >> 16)


def java_sort_key(strings: Iterable[str]) -> type[str] | None:
    """``None`` when Python's ``str`` order equals Java's ``compareTo`` for all of ``strings``."""
    return None if all(s.isascii() or max(s) < "\U00010000" for s in strings) else str


def java_sorted(strings: Iterable[str]) -> list[str]:
    """Sort as ``Collections.sort`` on Java strings would (UTF-16 code-unit order)."""
    items = list(strings)
    if java_sort_key(items) is None:
        return sorted(items)
    return sorted(items, key=_utf16_units)


def hashmap_capacity(hashes: Sequence[int]) -> int:
    """The table size of a ``new HashMap<>()`` after putting keys with these hashes in order."""
    capacity = 16
    threshold = 12
    counts: dict[int, int] = {}
    spreads = [spread(h) for h in hashes]
    for i, s in enumerate(spreads):
        bucket = s & (capacity - 1)
        n = counts.get(bucket, 0) + 1
        counts[bucket] = n
        resized = False
        if n > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            threshold = capacity * 3 // 4
            resized = True
        if i + 1 > threshold:
            capacity *= 2
            threshold = capacity * 3 // 4
            resized = True
        if resized:
            counts = {}
            for s2 in spreads[: i + 1]:
                b = s2 & (capacity - 1)
                counts[b] = counts.get(b, 0) + 1
    return capacity


def hashmap_order(keys: Sequence[str]) -> list[int]:
    """Indices of ``keys`` (distinct, in ``put`` order) in a fresh ``HashMap``'s iteration order."""
    hashes = [string_hash(k) for k in keys]
    capacity = hashmap_capacity(hashes)
    mask = capacity - 1
    buckets = [spread(h) & mask for h in hashes]
    return sorted(range(len(keys)), key=buckets.__getitem__)


class JavaHashSet:
    """A ``HashSet<TopicPartition>`` reduced to what the assignor needs: add, remove, first element.

    Elements are opaque ints with a precomputed Java hash supplied by the caller.
    """

    __slots__ = ("_capacity", "_threshold", "_seq", "_items", "_bucket_counts")

    def __init__(self) -> None:
        self._capacity = 16
        self._threshold = 12
        self._seq = 0
        # element -> (spread hash, insertion sequence)
        self._items: dict[int, tuple[int, int]] = {}
        self._bucket_counts: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, element: int) -> bool:
        return element in self._items

    def add(self, element: int, java_hash: int) -> None:
        if element in self._items:
            return
        s = spread(java_hash)
        self._seq += 1
        self._items[element] = (s, self._seq)
        bucket = s & (self._capacity - 1)
        n = self._bucket_counts.get(bucket, 0) + 1
        self._bucket_counts[bucket] = n
        grow = n > _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY
        if grow:
            self._resize()
        if len(self._items) > self._threshold:
            self._resize()

    def _resize(self) -> None:
        self._capacity *= 2
        self._threshold = self._capacity * 3 // 4
        mask = self._capacity - 1
        counts: dict[int, int] = {}
        for s, _ in self._items.values():
            b = s & mask
            counts[b] = counts.get(b, 0) + 1
        self._bucket_counts = counts

    def remove(self, element: int) -> None:
        entry = self._items.pop(element, None)
        if entry is not None:
            bucket = entry[0] & (self._capacity - 1)
            self._bucket_counts[bucket] -= 1

    def first(self) -> int:
        """``iterator().next()``: lowest bucket, then earliest linked node in it."""
        mask = self._capacity - 1
        best = -1
        best_key = (1 << 62, 0)
        for element, (s, seq) in self._items.items():
            key = (s & mask, seq)
            if key < best_key:
                best_key = key
                best = element
        if best < 0:
            raise KeyError("empty set")
        return best
