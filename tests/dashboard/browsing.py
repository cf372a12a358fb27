"""The served dashboard and a headless Chromium page on it, for the browser tests.

Chromium is Debian's, driven by Playwright (no browser download); a missing one skips locally
and fails under CI (tests/dashboard/tools.py).  Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.tools import free_port, need

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def served(
    delta_root: str,
    log: Path,
    refresh: int = 5,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """``groupwatch dashboard`` on ``delta_root``, on a free loopback port; yields its URL
    (``extra``: further arguments, ``--set`` say; ``env``: added to the environment)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groupwatch.cli",
            "dashboard",
            "--delta-root",
            delta_root,
            "--port",
            str(port),
            "--refresh",
            str(refresh),
            *extra,
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if proc.poll() is not None:
                pytest.fail(f"dashboard exited:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(url + "/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail(f"dashboard not up:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A Playwright page in headless Chromium; a JavaScript error on any page fails the test."""
    chromium = need("chromium", "chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is not installed (pip: .[dev])")
        pytest.skip("playwright is not installed")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        yield pg
        browser.close()
        assert not errors, errors
