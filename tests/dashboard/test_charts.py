"""The charts' time axis: times formatted as columns give exactly what ``Timestamp.isoformat``
gives value by value (Plotly.js reads the strings; the pages' tests compare them)."""

from __future__ import annotations

import random

import pandas as pd  # type: ignore[import-untyped]
import pytest

from groupwatch.dashboard import charts


def _one_by_one(values: pd.Series) -> list[str | None]:
    return [None if pd.isna(v) else pd.Timestamp(v).isoformat() for v in values]


def _times(rng: random.Random, n: int) -> list[pd.Timestamp | None]:
    base = pd.Timestamp("2026-11-29T05:00:00")
    out: list[pd.Timestamp | None] = []
    for _ in range(n):
        kind = rng.randrange(5)
        if kind == 0:
            out.append(None)
            continue
        at = base + pd.Timedelta(seconds=rng.randrange(-(10**8), 10**8))
        if kind >= 2:
            at += pd.Timedelta(microseconds=rng.randrange(1, 10**6))
        if kind == 4:
            at += pd.Timedelta(nanoseconds=rng.randrange(1, 1000))
        out.append(at)
    return out


@pytest.mark.parametrize("unit", ["ns", "us"])
@pytest.mark.parametrize("zone", [None, "UTC"])
def test_times_as_columns_read_as_isoformat_writes_them(unit: str, zone: str | None) -> None:
    rng = random.Random(f"{unit}{zone}")
    times = _times(rng, 2_000)
    if unit == "us":
        times = [None if t is None else t.floor("us") for t in times]
    values = pd.Series(pd.to_datetime(times).as_unit(unit))
    if zone is not None:
        values = values.dt.tz_localize(zone)
    # Every kind of value is there: nulls, whole seconds, microseconds (and nanoseconds).
    texts = [t for t in _one_by_one(values) if t is not None]
    assert any("." not in t.split("T")[1] for t in texts)
    assert any(len(t.split(".")[1][:9].rstrip("+0:")) > 0 for t in texts if "." in t)
    assert charts._iso(values) == _one_by_one(values)


def test_other_columns_are_formatted_value_by_value() -> None:
    berlin = pd.Series(pd.to_datetime(["2026-11-29T05:00:00", None]).tz_localize("Europe/Berlin"))
    assert charts._iso(berlin) == _one_by_one(berlin)
    mixed = pd.Series([pd.Timestamp("2026-11-29T05:00:00.5", tz="UTC"), None], dtype=object)
    assert charts._iso(mixed) == _one_by_one(mixed)
    assert charts._iso(pd.Series([], dtype="datetime64[us, UTC]")) == []
