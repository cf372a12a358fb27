"""The job's one line for a failed query: the innermost cause, and for a full disk where space
is needed and that a restart resumes."""

from __future__ import annotations

from groupwatch.job.failure import disk_full, failure_line, last_line

PYTHON_IN_JAVA = """\
Traceback (most recent call last):
  File "/x/sinks.py", line 10, in write
    table.write(rows)
OSError: Generic LocalFileSystem error: No space left on device (os error 28)
"""


def test_disk_full_from_a_python_write_names_the_roots_and_the_restart() -> None:
    line = failure_line(
        [
            "[STREAM_FAILED] Query [id = 1] terminated with exception: An exception was raised",
            "PythonException: An exception was raised by the Python Proxy.\n" + PYTHON_IN_JAVA,
        ],
        "/data/delta",
        "/data/checkpoints",
    )
    assert "\n" not in line
    assert "no space left on a disk it writes" in line
    assert "(OSError: Generic LocalFileSystem error: No space left on device (os error 28))" in line
    assert "delta.root (/data/delta)" in line and "checkpoint.root (/data/checkpoints)" in line
    assert "resumes from its checkpoint" in line


def test_disk_full_from_java_takes_the_message_that_says_so() -> None:
    line = failure_line(
        [
            "[STREAM_FAILED] Query terminated with exception",
            "FSError: java.io.IOException: No space left on device",
            "IOException: No space left on device",
        ],
        "d",
        "c",
    )
    assert "(IOException: No space left on device)" in line


def test_another_failure_is_its_innermost_cause() -> None:
    line = failure_line(
        ["outer", "SparkException: Job aborted", "ArithmeticException: / by zero"], "d", "c"
    )
    assert line == "the job stopped: its query failed (ArithmeticException: / by zero)"
    assert not disk_full(line)


def test_quota_counts_as_full_and_last_line_skips_blanks() -> None:
    assert disk_full("OSError: [Errno 122] Disk quota exceeded")
    assert not disk_full("Errno 2 No such file or directory")
    assert last_line("a\n\n  b  \n\n") == "b"
    assert last_line("") == ""
