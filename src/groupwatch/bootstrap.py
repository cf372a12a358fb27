"""The Kafka bootstrap servers the job reads from, with the ``local`` alias resolved.

``source.bootstrap_servers = "local"`` names the local development broker (``groupwatch broker
start``) wherever it listens.  That broker leaves its state file in its run folder
(``.groupwatch/run/broker/state.json``); this module reads the file and checks that the process
lives and its port answers, and needs nothing else of the development tooling, which is built on
it (``groupwatch_dev.broker``) rather than the other way round: production code imports this module
only.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from groupwatch import paths
from groupwatch.errors import GroupwatchError

#: The ``source.bootstrap_servers`` value that means the running local broker.
LOCAL_ALIAS = "local"
#: The name of the local broker the alias stands for.
LOCAL_BROKER = "broker"
#: What a local broker's run folder calls its state file.
STATE_FILE = "state.json"


class BootstrapError(GroupwatchError, RuntimeError):
    """The bootstrap servers cannot be resolved; the message says what to do."""


@dataclass(frozen=True)
class BrokerState:
    """What a local broker leaves in its run folder so that later commands can find it."""

    pid: int
    port: int
    controller_port: int
    cluster_id: str

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def state_file(name: str = LOCAL_BROKER, *, home: Path | None = None) -> Path:
    """Where the local broker ``name`` keeps its state (the folder is not created)."""
    return (home if home is not None else paths.home()) / "run" / name / STATE_FILE


def read_state(path: Path) -> BrokerState | None:
    """The state recorded in ``path``, or None if there is none (or it does not parse)."""
    try:
        return BrokerState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; /proc tells the truth on Linux.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def port_answers(port: int) -> bool:
    """Whether something accepts TCP connections on loopback ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def live_state(path: Path) -> BrokerState | None:
    """The state in ``path`` if its broker process lives and answers on its port, else None."""
    state = read_state(path)
    if state and pid_alive(state.pid) and port_answers(state.port):
        return state
    return None


def resolve_bootstrap(value: str) -> str:
    """``local`` means the running local broker; anything else is taken as given."""
    if value != LOCAL_ALIAS:
        return value
    state = live_state(state_file())
    if state is None:
        raise BootstrapError(
            "source.bootstrap_servers is 'local' but no local broker runs; "
            "start one with `groupwatch broker start`"
        )
    return state.bootstrap
