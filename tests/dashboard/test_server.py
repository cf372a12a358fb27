"""``groupwatch dashboard`` is served by waitress (a production WSGI server), on loopback unless
told otherwise, and its pages only read: the pages answer GET, nothing answers a write."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.scenario import build
from tests.dashboard.tools import free_port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, int]]:
    work = tmp_path_factory.mktemp("served")
    build(work / "delta")
    port = free_port()
    log = work / "dashboard.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupwatch.cli", "dashboard", "--delta-root",
         (work / "delta").as_uri(), "--port", str(port)],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(url + "/", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield url, log, port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_served_by_waitress_not_the_development_server(served: tuple[str, Path, int]) -> None:
    url, log, _ = served
    with urllib.request.urlopen(url + "/", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Server"] == "waitress"
    with urllib.request.urlopen(url + "/_dash-layout", timeout=10) as resp:
        assert resp.status == 200
    text = log.read_text()
    assert "development server" not in text.lower(), text
    assert f"on http://127.0.0.1:{served[2]}/" in text


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_nothing_answers_a_write(served: tuple[str, Path, int], method: str) -> None:
    url, _, _ = served
    for path in ("/", "/_dash-layout", "/fleet"):
        request = urllib.request.Request(url + path, data=b"{}", method=method)
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(request, timeout=10)
        assert exc.value.code == 405, (method, path)


def test_listens_on_loopback_only(served: tuple[str, Path, int]) -> None:
    _, _, port = served
    # Every address of this machine other than loopback must refuse the port.
    others = {
        info[4][0]
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        if not info[4][0].startswith("127.")
    }
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            others.add(probe.getsockname()[0])
        except OSError:
            pass
    others.discard("0.0.0.0")
    for address in others:
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(2)
            s.connect((address, port))
