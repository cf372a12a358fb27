"""The committed offset of every (group, topic, partition), as its commits and tombstones say.

A move backwards is ``rewound`` only when a member of the group did it within one generation:
a rebalance (the generation or group epoch changed since the previous commit) or a reset by
the group itself (written while the group had no members, as ``kafka-consumer-groups
--reset-offsets`` requires) is the group's own doing, and a committed offset past the log end
(a topic deleted and created again) going back to the new log is no rewind either; those are
judged where the log end is known (:mod:`groupwatch.detect.lag.judge`).
"""

from __future__ import annotations

from dataclasses import replace

from groupwatch.detect.lag.model import Commit

Key = tuple[str, str, int]


def advance(
    previous: Commit | None,
    new: Commit,
    *,
    members: int | None = None,
) -> Commit:
    """``new`` (a commit record's offset and time) on top of what was committed before.

    ``members``: how many members the group had when ``new`` was written (``None``: unknown,
    taken as some)."""
    if previous is None:
        return replace(new, moved_ms=new.commit_ms, rewound_from=None, rewound_ms=None)
    if new.offset == previous.offset:
        return replace(
            new,
            moved_ms=previous.since_ms,
            rewound_from=previous.rewound_from,
            rewound_ms=previous.rewound_ms,
            generation=previous.generation if new.generation is None else new.generation,
        )
    if new.offset > previous.offset:
        # Forward: a rewind lasts until the group is back where it was.
        back = previous.rewound_from
        still = back is not None and new.offset < back
        return replace(
            new,
            moved_ms=new.commit_ms,
            rewound_from=back if still else None,
            rewound_ms=previous.rewound_ms if still else None,
        )
    own_doing = (
        members == 0
        or new.generation is None
        or previous.generation is None
        or new.generation != previous.generation
    )
    if own_doing:
        return replace(new, moved_ms=new.commit_ms, rewound_from=None, rewound_ms=None)
    back = max(previous.offset, previous.rewound_from or previous.offset)
    return replace(new, moved_ms=new.commit_ms, rewound_from=back, rewound_ms=new.commit_ms)


class CommitBook:
    """Committed offsets by (group, topic, partition); tombstones remove them."""

    def __init__(self) -> None:
        self.commits: dict[Key, Commit] = {}

    def commit(self, new: Commit, *, members: int | None = None) -> Commit:
        key = (new.group, new.topic, new.partition)
        out = advance(self.commits.get(key), new, members=members)
        self.commits[key] = out
        return out

    def delete(self, group: str, topic: str, partition: int) -> None:
        """An offset tombstone (the offset was deleted or expired)."""
        self.commits.pop((group, topic, partition), None)

    def delete_group(self, group: str) -> None:
        """The group was deleted: all its offsets go."""
        for key in [k for k in self.commits if k[0] == group]:
            del self.commits[key]

    def groups(self) -> set[str]:
        return {k[0] for k in self.commits}

    def of_group(self, group: str) -> list[Commit]:
        return [c for k, c in sorted(self.commits.items()) if k[0] == group]
