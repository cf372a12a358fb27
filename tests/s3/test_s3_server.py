"""The tests' S3 server is a real one, and holds what safe commits on S3 rely on: a ``PUT``
with ``If-None-Match: *`` on an existing key fails (412) and leaves the object as it was, so
two delta-rs writers racing for one version of a table both land, neither overwrites."""

from __future__ import annotations

import threading

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch import config, storage
from tests.s3.server import S3Server


def test_a_conditional_put_on_an_existing_key_fails(s3: S3Server) -> None:
    s3.make_bucket("gw-server")
    assert s3.request("PUT", "/gw-server/k", b"first", {"If-None-Match": "*"}) == 200
    assert s3.request("PUT", "/gw-server/k", b"second", {"If-None-Match": "*"}) == 412
    assert (s3.data / "gw-server" / "k").read_bytes() == b"first"


def test_a_wrong_signature_is_refused(s3: S3Server) -> None:
    s3.make_bucket("gw-server")
    assert s3.request("PUT", "/gw-server/w", b"x", secret="not-the-secret") == 403
    assert not (s3.data / "gw-server" / "w").exists()


@pytest.mark.parametrize("writers", [4])
def test_racing_delta_rs_writers_lose_nothing(
    s3: S3Server, monkeypatch: pytest.MonkeyPatch, writers: int
) -> None:
    """Each writer loads the table at the same version, then all commit at once, several
    rounds: with the conditional put each round's losers retry on the new version."""
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    s3.make_bucket("gw-race")
    cfg = config.load(None, env={}, overrides=[f"storage.endpoint={s3.endpoint}"])
    uri = storage.for_delta_rs("s3a://gw-race/race/t")
    options = storage.delta_rs_options(cfg.storage, uri)
    write_deltalake(uri, pa.table({"w": [-1], "n": [-1]}), storage_options=options)
    rounds = 3
    for r in range(rounds):
        handles = [DeltaTable(uri, storage_options=options) for _ in range(writers)]
        errors = _race(handles, r)
        assert errors == []
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == rounds * writers
    rows = sorted(
        zip(*table.to_pyarrow_table().select(["n", "w"]).to_pydict().values(), strict=True)
    )
    assert rows == [(-1, -1)] + [(r, w) for r in range(rounds) for w in range(writers)]


def _race(handles: list[DeltaTable], round_: int) -> list[BaseException]:
    """Every handle appends one row at the same moment; what failed."""
    start = threading.Barrier(len(handles))
    errors: list[BaseException] = []

    def commit(w: int, handle: DeltaTable) -> None:
        start.wait()
        try:
            write_deltalake(handle, pa.table({"w": [w], "n": [round_]}), mode="append")
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=commit, args=(w, h)) for w, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
