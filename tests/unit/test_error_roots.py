"""Every error groupwatch raises on purpose derives from ``GroupwatchError``, so that a caller
(the CLI, a notebook, a supervisor) can tell the project's own failures from everyone else's.
The classes are found by walking the packages, so a new error class that forgets its root
fails here without being listed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import groupwatch
import groupwatch_dev
from groupwatch.errors import GroupwatchError

#: Modules that import Spark or a JVM-side library at import time are walked too: importing
#: pyspark does not start a JVM.
_PACKAGES = (groupwatch, groupwatch_dev)


def _error_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in _PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                    and name.endswith("Error")
                ):
                    found[f"{value.__module__}.{name}"] = value
    return [found[k] for k in sorted(found)]


def test_the_walk_finds_the_errors_it_must() -> None:
    names = {f"{c.__module__}.{c.__qualname__}" for c in _error_classes()}
    # The two that stood apart before: a walk that finds neither proves nothing.
    assert "groupwatch.spark.lag_process.LagProcessError" in names
    assert "groupwatch_dev.broker.BrokerError" in names


@pytest.mark.parametrize("error", _error_classes(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_error_derives_from_the_root(error: type[BaseException]) -> None:
    assert issubclass(error, GroupwatchError), (
        f"{error.__module__}.{error.__name__} derives from {[b.__name__ for b in error.__mro__]}"
    )
