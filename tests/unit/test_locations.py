"""Table and checkpoint roots as paths or URIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import config, locations


def test_plain_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = config.load(None, env={}, overrides=["delta.root=rel/delta"])
    assert cfg.table_path("findings") == str(tmp_path / "rel" / "delta" / "findings")


def test_local_uris_take_hadoops_spelling() -> None:
    cfg = config.load(None, env={}, overrides=["checkpoint.root=file:///data/gw/"])
    assert cfg.checkpoint_path("groupwatch") == "file:/data/gw/groupwatch"
    assert locations.local_path("file:///data/gw") == Path("/data/gw")
    assert locations.local_path("file://localhost/data/gw") == Path("/data/gw")
    # The spelling the table paths take is itself read back as the local path.
    assert locations.local_path("file:/data/gw/groupwatch") == Path("/data/gw/groupwatch")
    assert locations.local_path("file:/data/g%20w") == Path("/data/g w")


@pytest.mark.parametrize(
    "root", ["s3a://bucket/groupwatch/", "abfss://tables@account.dfs.core.windows.net/gw"]
)
def test_remote_uris_stay_uris(root: str) -> None:
    cfg = config.load(None, env={}, overrides=[f"delta.root={root}"])
    assert cfg.table_path("findings") == root.rstrip("/") + "/findings"
    assert locations.local_path(root) is None
