"""The root of groupwatch's own errors.

Every error the project raises on purpose derives from :class:`GroupwatchError` (and, where it
reports bad input, from ``ValueError`` too), so a caller can catch the project's errors apart
from everyone else's; each is raised ``from`` its cause when it has one.
"""

from __future__ import annotations


class GroupwatchError(Exception):
    """Something groupwatch detected and reports: bad input, bad configuration, an
    unreachable dependency."""
