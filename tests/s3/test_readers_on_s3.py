"""The dashboard, the notifier and ``groupwatch lag`` over tables on S3 (the tests' S3Proxy)
read what they read over the same tables on this machine: the KAFKA-7026 scenario's tables
and lag tables written locally with delta-rs are copied object by object to a bucket, and
one more commit goes to each side through delta-rs's S3 client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.fs as pafs  # type: ignore[import-untyped]
import pytest
from deltalake import write_deltalake

from groupwatch import config, storage
from groupwatch.dashboard import views
from groupwatch.dashboard.filters import Filters
from groupwatch.delta.read import DeltaStore, StorageError, schema
from groupwatch.tables import TABLES
from tests.dashboard import lag_scenario as ls
from tests.dashboard.browsing import ARTIFACTS, chromium_page, served
from tests.dashboard.scenario import GROUP, build
from tests.s3.server import S3Server

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "gw-readers"
S3_ROOT = f"s3a://{BUCKET}/groupwatch/delta"


@pytest.fixture(scope="module")
def tables(
    s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DeltaStore, DeltaStore]]:
    """(local store, S3 store) over the same tables."""
    saved = {k: os.environ.get(k) for k in s3.env()}
    os.environ.update(s3.env())
    local = tmp_path_factory.mktemp("readers") / "delta"
    build(local)
    now = datetime.now(UTC).replace(microsecond=0)
    own = ("c-2-8f", "billing-2", "/10.0.3.7", 41)
    ls.write_lag(
        local,
        [
            ls.partition("billing", "orders", 3, 0, 500, 400.0, "stopped", now, owner=own),
            ls.partition("billing", "orders", 4, 90, 100, 2.0, "ok", now, owner=own),
        ],
        ls.history("billing", "orders", now, [(10, 300, 200.0, "ok"), (5, 500, 400.0, "stopped")]),
    )
    s3.make_bucket(BUCKET)
    fs = pafs.S3FileSystem(
        access_key=s3.env()["AWS_ACCESS_KEY_ID"],
        secret_key=s3.env()["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=s3.endpoint.split("://", 1)[1],
        scheme="http",
        region="us-east-1",
        force_virtual_addressing=False,
    )
    pafs.copy_files(str(local), f"{BUCKET}/groupwatch/delta", destination_filesystem=fs)
    cfg = _config(s3)
    # One more commit on each side, the S3 one through delta-rs's own S3 client.
    extra = pa.table(
        {"group": ["late"], "observed_at": [now]},
    )
    for where, options in (
        (str(local / "lag_history"), None),
        (
            storage.for_delta_rs(f"{S3_ROOT}/lag_history"),
            storage.delta_rs_options(cfg.storage, S3_ROOT),
        ),
    ):
        full = {f.name: extra.column(f.name) if f.name in extra.column_names else
                pa.nulls(1, f.type) for f in schema("lag_history")}  # fmt: skip
        write_deltalake(
            where, pa.table(full, schema=schema("lag_history")), mode="append",
            storage_options=options,
        )  # fmt: skip
    yield DeltaStore(local), DeltaStore(S3_ROOT, cfg.storage)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _config(s3: S3Server, *extra: str) -> config.Config:
    return config.load(None, env={}, overrides=[f"storage.endpoint={s3.endpoint}", *extra])


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    key = sorted(a.columns)
    norm = [
        f[key].apply(lambda col: col.map(repr)).sort_values(key).reset_index(drop=True)
        for f in (a, b)
    ]
    pd.testing.assert_frame_equal(norm[0], norm[1])


def test_every_table_reads_the_same_on_s3(tables: tuple[DeltaStore, DeltaStore]) -> None:
    local, remote = tables
    assert remote.remote and not local.remote
    seen = 0
    for name in TABLES:
        assert remote.version(name) == local.version(name), name
        _same(local.read(name), remote.read(name))
        seen += local.version(name) is not None
    assert seen >= 6  # the scenario's tables and the lag tables exist
    listed = remote.files("member_assignments")
    assert listed is not None and listed == local.files("member_assignments")
    _, files = listed
    for data_file in files:
        _same(local.read_file("member_assignments", data_file),
              remote.read_file("member_assignments", data_file))  # fmt: skip
    _same(
        local.read_rows("group_snapshots", "group", GROUP),
        remote.read_rows("group_snapshots", "group", GROUP),
    )
    assert len(remote.read_rows("group_snapshots", "group", GROUP)) > 0
    # The late commit made through delta-rs's S3 client is read back.
    assert "late" in set(remote.read("lag_history")["group"])


def test_the_pages_views_are_the_same_on_s3(tables: tuple[DeltaStore, DeltaStore]) -> None:
    def fleet(store: DeltaStore) -> pd.DataFrame:
        return views.fleet(
            store.read("group_snapshots"),
            store.read("findings"),
            store.read("member_assignments"),
            Filters(),
        )

    local, remote = tables
    assert not fleet(remote).empty
    _same(fleet(local), fleet(remote))


def _cli(s3: S3Server, *args: str, secret: str | None = None, **env: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "groupwatch.cli", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=180,
        env={**os.environ, **s3.env(**({"secret": secret} if secret else {})), **env},
    )  # fmt: skip


def test_lag_command_reads_the_same_rows_on_s3(
    s3: S3Server, tables: tuple[DeltaStore, DeltaStore]
) -> None:
    local, _ = tables
    on_s3 = _cli(s3, "lag", "--json", "--set", f"storage.endpoint={s3.endpoint}",
                 "--delta-root", S3_ROOT)  # fmt: skip
    here = _cli(s3, "lag", "--json", "--delta-root", str(local.root))
    assert on_s3.returncode == 0, on_s3.stderr
    rows = [json.loads(line) for line in on_s3.stdout.splitlines()]
    assert [(r["topic"], r["partition"], r["status"]) for r in rows] == [
        ("orders", 3, "stopped"),
        ("orders", 4, "ok"),
    ]
    assert on_s3.stdout == here.stdout
    # s3:// is the same place as s3a://, and the environment's GROUPWATCH_STORAGE_* is read.
    plain = _cli(s3, "lag", "--json", "--delta-root", storage.for_delta_rs(S3_ROOT),
                 GROUPWATCH_STORAGE_ENDPOINT=s3.endpoint)  # fmt: skip
    assert plain.stdout == here.stdout, plain.stderr


def test_notify_over_s3_fires_as_over_local_tables(
    s3: S3Server, tables: tuple[DeltaStore, DeltaStore], tmp_path: Path
) -> None:
    local, _ = tables
    out = {}
    for where, root in (("local", str(local.root)), ("s3", S3_ROOT)):
        rules = tmp_path / f"alerts-{where}.toml"
        rules.write_text(
            '[notifier]\nstate_file = "%s"\nlog = true\n[[rule]]\nname = "all"\n'
            % (tmp_path / f"state-{where}.json")
        )
        done = _cli(s3, "notify", "--once", "--rules", str(rules), "--delta-root", root,
                    "--set", f"storage.endpoint={s3.endpoint}")  # fmt: skip
        assert done.returncode == 0, done.stderr
        out[where] = [line for line in done.stdout.splitlines() if line.startswith("notify:")]
    assert out["s3"] == out["local"]
    assert out["s3"] and "0 new alert(s)" not in out["s3"][0]


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("wrong secret", "access denied"),
        ("missing bucket", "does not exist"),
        ("unreachable endpoint", "does not answer"),
    ],
)
@pytest.mark.parametrize("command", ["run", "lag", "notify", "dashboard"])
def test_bad_outside_state_is_one_line_and_a_non_zero_exit(
    s3: S3Server, tables: tuple[DeltaStore, DeltaStore], tmp_path: Path,
    case: str, words: str, command: str,
) -> None:  # fmt: skip
    endpoint, root, secret = s3.endpoint, S3_ROOT, None
    if case == "wrong secret":
        secret = "not-the-secret"
    elif case == "missing bucket":
        root = "s3a://gw-no-such-bucket/groupwatch/delta"
    else:
        endpoint = "http://127.0.0.1:9"  # discard: nothing listens
    rules = tmp_path / "alerts.toml"
    rules.write_text(f'[notifier]\nstate_file = "{tmp_path / "state.json"}"\n')
    args = {"lag": ["lag"], "notify": ["notify", "--once", "--rules", str(rules)],
            "dashboard": ["dashboard", "--port", "0"],
            "run": ["run", "--once", "--set", "alerts.rules="]}[command]  # fmt: skip
    before = sorted(p.relative_to(s3.data) for p in s3.data.rglob("*"))
    where = (["--set", f"delta.root={root}", "--set", f"checkpoint.root={root}-checkpoints"]
             if command == "run" else ["--delta-root", root])  # fmt: skip
    done = _cli(s3, *args, *where, "--set", f"storage.endpoint={endpoint}",
                secret=secret)  # fmt: skip
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert root in lines[0] and words in lines[0], lines[0]
    assert sorted(p.relative_to(s3.data) for p in s3.data.rglob("*")) == before


def test_a_wrong_region_or_storage_key_is_refused_before_any_read() -> None:
    with pytest.raises(config.ConfigError, match="storage.secret"):
        config.load(None, env={}, overrides=["storage.secret=x"])
    with pytest.raises(StorageError):
        DeltaStore(
            "s3a://gw-readers/x",
            config.load(None, env={}, overrides=["storage.endpoint=http://127.0.0.1:9"]).storage,
        )


@pytest.mark.browser
def test_dashboard_in_a_browser_over_s3(
    s3: S3Server, tables: tuple[DeltaStore, DeltaStore], tmp_path: Path
) -> None:
    on_s3 = ("--set", f"storage.endpoint={s3.endpoint}")
    with served(S3_ROOT, tmp_path / "dashboard.log", extra=on_s3, env=s3.env()) as url:
        with chromium_page() as page:
            page.goto(url + "/")
            row = page.wait_for_selector(f'#fleet-table tr[data-group="{GROUP}"]', timeout=30000)
            assert row.get_attribute("data-health") == "critical"
            page.goto(f"{url}/group?group={GROUP}")
            matrix = page.wait_for_selector("#ownership-matrix", timeout=30000)
            assert matrix.query_selector("tr.overlap") is not None
            page.screenshot(path=str(ARTIFACTS / "dashboard-s3.png"), full_page=True)
