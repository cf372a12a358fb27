"""The "local" bootstrap alias, resolved by production code from the local broker's state file
alone, and the job's setup errors as groupwatch errors."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupwatch import bootstrap
from groupwatch.bootstrap import BootstrapError, resolve_bootstrap
from groupwatch.errors import GroupwatchError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GROUPWATCH_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def listening() -> Iterator[int]:
    """A loopback port that accepts connections, as a running broker's does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _write_state(home: Path, pid: int, port: int) -> None:
    path = home / "run" / "broker" / "state.json"
    path.parent.mkdir(parents=True)
    state = {"pid": pid, "port": port, "controller_port": port + 1, "cluster_id": "c"}
    path.write_text(json.dumps(state))


def test_servers_other_than_the_alias_are_taken_as_given(home: Path) -> None:
    assert resolve_bootstrap("kafka-1:9092,kafka-2:9092") == "kafka-1:9092,kafka-2:9092"
    assert not (home / "run").exists()


def test_the_alias_without_a_local_broker_fails_and_creates_nothing(home: Path) -> None:
    with pytest.raises(BootstrapError, match="no local broker runs"):
        resolve_bootstrap("local")
    assert not (home / "run").exists()


def test_the_alias_names_the_live_broker_of_the_state_file(home: Path, listening: int) -> None:
    _write_state(home, os.getpid(), listening)
    assert resolve_bootstrap("local") == f"127.0.0.1:{listening}"


def test_a_broker_whose_port_does_not_answer_is_not_running(home: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        closed = int(s.getsockname()[1])  # bound, never listening
        _write_state(home, os.getpid(), closed)
        with pytest.raises(BootstrapError):
            resolve_bootstrap("local")


def test_a_state_file_that_does_not_parse_is_no_broker(home: Path) -> None:
    path = bootstrap.state_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert bootstrap.read_state(path) is None
    with pytest.raises(BootstrapError):
        resolve_bootstrap("local")


def test_the_development_broker_uses_the_same_state_file(home: Path, listening: int) -> None:
    from groupwatch_dev.broker import LocalBroker

    _write_state(home, os.getpid(), listening)
    broker = LocalBroker()
    assert broker.state_file == bootstrap.state_file()
    running = broker.running()
    assert running is not None and running.bootstrap == f"127.0.0.1:{listening}"


def test_setup_errors_are_groupwatch_errors() -> None:
    from groupwatch.spark.preflight import SourceUnreachable
    from groupwatch.spark.session import SparkSetupError

    for error in (BootstrapError, SourceUnreachable, SparkSetupError):
        assert issubclass(error, GroupwatchError)
        # Callers that caught them as runtime errors still do.
        assert issubclass(error, RuntimeError)
