"""Table and checkpoint locations: local paths or URIs (``file:///``, ``s3a://``, ``abfss://``).

A cluster's executors write the tables, so the location must mean the same on every node: a
shared file system or an object store, named by URI. A plain path is resolved against the
directory groupwatch started in, because Delta reads a relative location as a table name.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

#: A scheme and an authority (``s3a://``, ``file:///``), or Hadoop's spelling of a local URI
#: (``file:/a/b``, which :func:`join` writes).
_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|file:/)")


def is_uri(location: str) -> bool:
    return bool(_SCHEME.match(location))


def join(root: str, name: str) -> str:
    """``name`` under ``root``; a URI stays a URI, a path becomes absolute."""
    local = local_path(root)
    if is_uri(root) and local is not None:
        # Hadoop's own spelling of a local URI (file:/a/b): Delta compares a new table's
        # location with its qualified path as strings, and file:///a/b would differ.
        return f"file:{local.resolve() / name}"
    if is_uri(root):
        return root.rstrip("/") + "/" + name
    return str(Path(root).resolve() / name)


def local_path(location: str) -> Path | None:
    """The local path of a plain path or a ``file:`` URI (``file:///a/b``, or Hadoop's
    ``file:/a/b``); None for a remote store."""
    if not is_uri(location):
        return Path(location)
    parsed = urlparse(location)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(unquote(parsed.path))
    return None
