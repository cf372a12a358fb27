"""What a batch brings to the driver (spark/driver_tally.py): counted on the batch's thread
only, summed per purpose, printed in the batch's line and added to the job's counters."""

from __future__ import annotations

import threading

import pyarrow as pa  # type: ignore[import-untyped]

from groupwatch.spark import batch_report, driver_tally
from groupwatch.spark.metrics import JobMetrics


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def batch_done(self, batch_id: int, line: str) -> None:
        self.lines.append(f"batch {batch_id}: {line}")


def test_collects_in_a_batch_are_summed_per_purpose_and_others_not_counted() -> None:
    table = pa.table({"group": ["a", "b", "c"], "n": [1, 2, 3]})
    one = pa.table({"group": ["d"], "n": [4]})
    size = table.get_total_buffer_size() + one.get_total_buffer_size()
    driver_tally.arrow("records", table)  # outside a batch: nobody's
    with driver_tally.batch() as tally:
        assert driver_tally.arrow("records", table) is table
        driver_tally.arrow("records", one)
        assert driver_tally.rows("due groups", ["x", "y"]) == ["x", "y"]
        # The lag poll's thread is not the batch's: its reads count nothing here.
        other = threading.Thread(target=driver_tally.arrow, args=("lag", table))
        other.start()
        other.join()
    assert tally.parts == {
        "records": (4, size),
        "due groups": (2, 0),
    }
    assert tally.rows == 6 and tally.nbytes == size and size > 0
    with driver_tally.batch() as empty:
        pass
    assert empty.line() == "to the driver nothing"


def test_the_batch_line_and_the_counters_say_what_came_to_the_driver() -> None:
    tally = driver_tally.DriverTally()
    tally.add("records", 1_200, 3 * 1024 * 1024)
    tally.add("state", 40, 2048)
    log, metrics = _Log(), JobMetrics()
    report = batch_report.BatchReport(
        batch_id=7,
        counts={1: 1_240},
        written={},
        findings={},
        quarantined={},
        seconds=1.5,
        to_driver=tally,
    )
    batch_report.report(log, metrics, report)  # type: ignore[arg-type]
    [line] = log.lines
    assert "; to the driver 1,240 rows 3.0 MB (records 1,200 3.0 MB, state 40 2.0 KB); 1.5s" in line
    sample = metrics.registry.get_sample_value
    assert sample("groupwatch_driver_collected_rows_total") == 1_240
    assert sample("groupwatch_driver_collected_bytes_total") == 3 * 1024 * 1024 + 2048
