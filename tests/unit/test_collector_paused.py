"""The job's workers pause Python's cycle collector per group and always turn it back on."""

from __future__ import annotations

import gc

import pytest

from groupwatch.spark.python_stage import _collector_paused


def test_collector_is_off_inside_and_on_again_after() -> None:
    assert gc.isenabled()
    with _collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_collector_is_on_again_after_an_error() -> None:
    with pytest.raises(RuntimeError), _collector_paused():
        raise RuntimeError("a group failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with _collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
