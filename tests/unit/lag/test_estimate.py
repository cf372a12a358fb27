"""Seconds behind from the log-end history: interpolated, never extrapolated."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from groupwatch.detect.lag.estimate import seconds_behind
from groupwatch.detect.lag.model import EndOffset


def obs(*points: tuple[int, int]) -> list[EndOffset]:
    return [EndOffset("t", 0, 0, end, ms) for ms, end in points]


def test_interpolates_between_the_two_observations_that_bracket_the_commit() -> None:
    # 10 records/s: the end passed offset 150 (record 150 written) at 15 s.
    history = obs((0, 0), (10_000, 100), (20_000, 200), (30_000, 300))
    behind = seconds_behind(history, 150)
    assert behind is not None and not behind.at_least
    assert abs(behind.seconds - (30.0 - 15.1)) < 1e-9


def test_caught_up_is_zero_whatever_the_age() -> None:
    history = obs((0, 50), (3_600_000, 50))
    assert seconds_behind(history, 50) == seconds_behind(history, 70)
    behind = seconds_behind(history, 50)
    assert behind is not None and (behind.seconds, behind.at_least) == (0.0, False)


def test_older_than_the_history_is_at_least_its_span() -> None:
    history = obs((100_000, 500), (160_000, 800))
    behind = seconds_behind(history, 10)
    assert behind is not None and behind.at_least and behind.seconds == 60.0


def test_a_log_that_went_backwards_starts_a_new_history() -> None:
    # Topic created again at 20 s: the old ends say nothing about the new log.
    history = obs((0, 1000), (10_000, 2000), (20_000, 5), (30_000, 15))
    behind = seconds_behind(history, 7)
    assert behind is not None and not behind.at_least
    assert abs(behind.seconds - (30.0 - (20.0 + 3 / 10 * 10))) < 1e-9


def test_nothing_observed_is_unknown() -> None:
    assert seconds_behind([], 5) is None


@given(
    rate=st.integers(min_value=1, max_value=5_000),
    poll_ms=st.integers(min_value=1_000, max_value=60_000),
    polls=st.integers(min_value=2, max_value=40),
    behind_ms=st.integers(min_value=0, max_value=3_000_000),
)
def test_on_a_steady_producer_the_error_is_below_one_poll(
    rate: int, poll_ms: int, polls: int, behind_ms: int
) -> None:
    """A producer writing ``rate`` records/s from time 0; the consumer's next record was
    written ``behind_ms`` before the newest poll: the estimate is within one poll of it, or an
    "at least" no larger than the truth."""
    now = poll_ms * polls
    history = obs(*((t, rate * t // 1000) for t in range(0, now + 1, poll_ms)))
    written = max(0, now - behind_ms)
    committed = rate * written // 1000  # the record at this offset was written at ~``written``
    # The log end is rate * t // 1000 at time t: the record at offset ``committed`` is there
    # once the end passes it, when it becomes committed + 1.
    truth_written = (committed + 1) * 1000 / rate
    behind = seconds_behind(history, committed)
    assert behind is not None
    end = history[-1].end_offset
    if committed >= end:
        assert behind.seconds == 0.0
        return
    truth = (now - truth_written) / 1000
    if behind.at_least:
        assert behind.seconds <= truth + 1e-9
    else:
        assert abs(behind.seconds - truth) <= poll_ms / 1000
