"""A lag poll's judgement in a Python process of its own (``lag.judge_process``).

A poll judges every committed partition: 3-6 s of Python at the 1.2 M partitions of the
cluster model, judged as columns (bench/HISTORY.md, "A poll judged as columns").  In a driver
thread those seconds share the interpreter with the batches, whose every call into the JVM
then waits for it
(docs/lag.md).  Here the
driver keeps what needs Spark (asking the brokers, through the JVM) and hands everything else
to a child process: the commits and owners read from the tables, the keeper and its memory,
the judgement, and the writes of the lag tables.  What crosses is small: the partitions to
ask (by topic), the brokers' answer as the JVM's text, and back the topics' lag, the findings
opened and resolved and the alerting rows.

The child is ``python -m groupwatch.spark.lag_process``, started with the driver's own
interpreter and ``sys.path`` (so it runs wherever the driver runs, packaged or not), and
speaks pickled requests over its standard input and output.  It ends when its input closes:
a driver that dies takes it along.  A child that dies fails the poll under way, and a new one
is started for the next poll; its keeper is rebuilt from ``end_offsets``, as at a restart of
the job.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import traceback
from typing import IO, Any

from groupwatch.config import Config
from groupwatch.detect.lag.fleet import rows_of
from groupwatch.detect.lag.judge import FINDING_OF
from groupwatch.detect.lag.poll import PollResult
from groupwatch.errors import GroupwatchError
from groupwatch.spark.lag_judge import Judged, LagJudge

log = logging.getLogger("groupwatch.job")


class LagProcessError(GroupwatchError, RuntimeError):
    """The child failed a request (its traceback in the message) or ended."""


def _slim(judged: Judged, every_row: bool) -> Judged:
    """What the driver needs of a judgement: its rows only where they alert (or all, for
    per-partition metrics), no answers."""
    result = judged.result
    rows = result.rows
    if result.table is not None:  # ``rows`` holds the alerting ones, ``table`` all
        rows = rows_of(result.table) if every_row else rows
    elif not every_row:
        rows = [r for r in rows if r.status in FINDING_OF]
    return Judged(
        PollResult(rows, result.topics, result.opened, result.resolved), [], judged.last_ok_ms
    )


class LagProcess:
    """The driver's side: :class:`~groupwatch.spark.lag_judge.LagJudge`'s methods, run in the
    child."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._child: subprocess.Popen[bytes] | None = None
        #: One request at a time on the pipe: a batch may poll while the thread is stopping.
        self._talking = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        child = subprocess.Popen(
            [sys.executable, "-m", "groupwatch.spark.lag_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdin is not None
        pickle.dump(self.config, child.stdin)
        child.stdin.flush()
        log.info("lag: polls are judged in process %d", child.pid)
        return child

    def _call(self, name: str, *args: Any) -> Any:
        with self._talking:
            return self._request(name, *args)

    def _request(self, name: str, *args: Any) -> Any:
        if self._child is not None and self._child.poll() is not None:
            code = self._child.returncode
            self.close()
            if name != "wanted":  # the commits it read went with it: this poll fails
                raise LagProcessError(f"the lag process ended (exit {code}) before {name}")
        if self._child is None:
            self._child = self._start()
        child = self._child
        assert child.stdin is not None and child.stdout is not None
        try:
            pickle.dump((name, args), child.stdin)
            child.stdin.flush()
            ok, value = pickle.load(child.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            self.close()
            raise LagProcessError(f"the lag process ended during {name}") from exc
        if not ok:
            raise LagProcessError(f"the lag process failed {name}:\n{value}")
        return value

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def wanted(self) -> dict[str, list[int]]:
        result: dict[str, list[int]] = self._call("wanted")
        return result

    def unbracketed(self, answer: Any) -> dict[tuple[str, int], list[int]]:
        result: dict[tuple[str, int], list[int]] = self._call("unbracketed", answer)
        return result

    def judge(self, answer: Any, stale: bool, known_ms: int | None, times: Any = None) -> Any:
        return self._call("judge", answer, stale, known_ms, times)

    def write(self) -> None:
        self._call("write")

    def close(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: a config, then requests until the input ends."""
    import gc

    config: Config = pickle.load(requests)
    judging = LagJudge(config)
    every_row = config.lag.partition_metrics
    # The judgement makes millions of short-lived values and no reference cycles, and the
    # keeper holds millions of long-lived ones: the cyclic collector would walk them all.
    gc.disable()
    while True:
        try:
            name, args = pickle.load(requests)
        except EOFError:
            return
        try:
            value = getattr(judging, name)(*args)
            if name == "judge":
                value = _slim(value, every_row)
            reply: tuple[bool, Any] = (True, value)
        except Exception:  # noqa: BLE001 - the driver logs it and tries the next poll
            reply = (False, traceback.format_exc())
        pickle.dump(reply, replies)
        replies.flush()


def main() -> None:
    # The replies get a descriptor of their own, and descriptor 1 becomes the job's error
    # stream: whatever the child prints, from Python or from native code that writes to the
    # descriptor itself (Arrow's and delta-rs' libraries), cannot land inside a pickled reply
    # (a live run at fleet scale once read a stray byte where a reply began, and lost a poll).
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s [lag process]: %(message)s",
    )
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
