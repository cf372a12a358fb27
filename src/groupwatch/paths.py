"""Where the project keeps what setup fetched and what runs produce (all git-ignored)."""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout groupwatch runs from (the package is installed editable by scripts/setup).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def home() -> Path:
    """``$GROUPWATCH_HOME``; else ``.groupwatch/`` of the checkout the package runs from; else
    (an installed wheel, e.g. in an image) ``.groupwatch/`` in the current directory."""
    if "GROUPWATCH_HOME" in os.environ:
        return Path(os.environ["GROUPWATCH_HOME"])
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / ".groupwatch"
    return Path.cwd() / ".groupwatch"


def jars_dir(kind: str) -> Path:
    """``spark`` (Kafka connector, Delta) or ``kafka`` (broker, clients, oracle harness)."""
    return home() / "jars" / kind


def run_dir(name: str) -> Path:
    """A folder for one local service's state (data, logs, pid files)."""
    path = home() / "run" / name
    path.mkdir(parents=True, exist_ok=True)
    return path
