"""Where the project keeps what setup fetched and what runs produce (all git-ignored)."""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout groupwatch runs from (the package is installed editable by scripts/setup).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def home() -> Path:
    """``.groupwatch/`` in the checkout, or ``$GROUPWATCH_HOME``."""
    return Path(os.environ.get("GROUPWATCH_HOME", PROJECT_ROOT / ".groupwatch"))


def jars_dir(kind: str) -> Path:
    """``spark`` (Kafka connector, Delta) or ``kafka`` (broker, clients, oracle harness)."""
    return home() / "jars" / kind


def run_dir(name: str) -> Path:
    """A folder for one local service's state (data, logs, pid files)."""
    path = home() / "run" / name
    path.mkdir(parents=True, exist_ok=True)
    return path
