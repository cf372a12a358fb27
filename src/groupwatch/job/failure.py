"""One line for a query that ended with an error, naming what the operator does about it.

Spark ends a streaming query on any failure of a batch (a write refused, a file system full)
and hands back an exception whose text is the whole plan and two stack traces, Java's and
Python's. The cause an operator can act on is the innermost one, in its last line. A full disk
is the failure a long-running job meets most: its line says where space is needed, and that a
restart resumes from the checkpoint (what was not committed is done again, exactly once).
"""

from __future__ import annotations

import re

#: How a full disk (ENOSPC) or an exhausted quota (EDQUOT) reads in Java's, Python's and
#: delta-rs's (Rust's) messages.
_DISK_FULL = re.compile(
    r"No space left on device|Disk quota exceeded|os error (28|122)|Errno (28|122)", re.I
)


def last_line(message: str) -> str:
    """The last non-empty line of a message: a Python traceback's exception line, a Java
    message's own first line if it has one line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def disk_full(message: str) -> bool:
    """Whether a failure's message says the file system has no room left."""
    return bool(_DISK_FULL.search(message))


def failure_line(causes: list[str], delta_root: str, checkpoint_root: str) -> str:
    """The job's one line for a query that failed with ``causes`` (outermost first)."""
    whole = "\n".join(causes)
    innermost = next((c for c in reversed(causes) if c.strip()), "")
    cause = last_line(innermost) or "no message"
    if disk_full(whole):
        full = next((last_line(c) for c in reversed(causes) if disk_full(c)), cause)
        return (
            f"the job stopped: no space left on a disk it writes ({full}); free space for "
            f"delta.root ({delta_root}) and checkpoint.root ({checkpoint_root}) and start it "
            "again: it resumes from its checkpoint"
        )
    return f"the job stopped: its query failed ({cause})"
