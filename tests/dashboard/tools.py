"""System tools the dashboard tests use: missing ones skip locally but fail under CI."""

from __future__ import annotations

import os
import shutil
import socket

import pytest


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        message = f"{tool} is not installed (Debian package {package}; scripts/setup installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
