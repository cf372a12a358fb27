"""The per-batch log line: the batch's summary joined with the source lag Spark reports later."""

from __future__ import annotations

import logging

import pytest

from groupwatch.spark.batchlog import BatchLog


def test_line_joins_summary_and_lag_and_tracks_backlog(caplog: pytest.LogCaptureFixture) -> None:
    log = BatchLog(logging.getLogger("test.batchlog"))
    with caplog.at_level(logging.INFO, logger="test.batchlog"):
        log.batch_done(0, "100 records")
        assert log.progress(0, 100, 300, 50.0) == (
            "batch 0: 100 records; lag 300 records, backlog 25% done, about 6 s left"
        )
        log.batch_done(1, "200 records")
        line = log.progress(1, 200, 100, 50.0)
        assert line is not None and "backlog 75% done" in line
        log.batch_done(2, "100 records")
        assert log.progress(2, 100, 0, 50.0) == "batch 2: 100 records; caught up"
        # A new backlog after catching up counts from zero again.
        log.batch_done(3, "10 records")
        line = log.progress(3, 10, 990, 0.0)
        assert line == "batch 3: 10 records; lag 990 records, backlog 1% done"
    assert [r.getMessage() for r in caplog.records][2] == "batch 2: 100 records; caught up"


def test_empty_batches_log_nothing_and_flush_logs_what_is_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = BatchLog(logging.getLogger("test.batchlog"))
    with caplog.at_level(logging.INFO, logger="test.batchlog"):
        assert log.progress(5, 0, 0, 0.0) is None
        log.batch_done(7, "3 records")
        log.batch_done(6, "2 records")
        log.flush()
        log.flush()
        assert log.progress(6, 2, None, 0.0) is None
    assert [r.getMessage() for r in caplog.records] == [
        "batch 6: 2 records",
        "batch 7: 3 records",
    ]


def test_unknown_lag_is_said() -> None:
    log = BatchLog(logging.getLogger("test.batchlog"))
    log.batch_done(0, "1 records")
    assert log.progress(0, 1, None, 1.0) == "batch 0: 1 records; lag unknown"
