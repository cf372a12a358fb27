"""The local broker's cluster id: the format KRaft wants, and never one the storage tool's
argument parser would read as an option."""

from __future__ import annotations

import uuid

import pytest

from groupwatch_dev import broker


def test_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 encodes to "-" first in URL-safe base64; the second UUID is an ordinary one.
    ids = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(int=1)])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(ids))
    cid = broker._cluster_id()
    assert cid == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert len(cid) == 22 and not cid.startswith("-")
