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


def test_an_empty_chart_says_so_and_draws_no_axes() -> None:
    nothing = pd.DataFrame({"t": pd.Series(dtype="datetime64[ns, UTC]"), "y": [], "s": []})
    for fig in (
        charts.empty("Quarantined records", note="no record quarantined yet"),
        charts.lines(nothing, "t", ["y"], "Throughput"),
        charts.by_series(nothing, "t", "y", "s", "Lag"),
        charts.bubbles(nothing, "t", "y", nothing["y"], "s", [], "Generations"),
    ):
        assert fig["data"] == []
        assert fig["layout"]["xaxis"] == {"visible": False}
        assert fig["layout"]["yaxis"] == {"visible": False}
        assert fig["layout"]["annotations"][0]["text"]


def test_a_single_point_sits_in_an_hour_of_time() -> None:
    one = pd.DataFrame({"t": pd.to_datetime(["2026-11-24T12:00:00Z"]), "y": [3.0]})
    fig = charts.lines(one, "t", ["y"], "Lag")
    lo, hi = (pd.Timestamp(v) for v in fig["layout"]["xaxis"]["range"])
    assert hi - lo == pd.Timedelta(hours=1) and lo < one["t"][0] < hi
    wide = pd.DataFrame({"t": pd.to_datetime(["2023-05-02T00:00:00Z", "2026-11-24T00:00:00Z"]),
                         "y": [1.0, 2.0]})  # fmt: skip
    assert "range" not in (charts.lines(wide, "t", ["y"], "Lag")["layout"].get("xaxis") or {})


def test_replayed_records_findings_are_counted_apart_from_the_live_latency() -> None:
    from groupwatch.dashboard import views
    from groupwatch.dashboard.filters import Filters

    now = pd.Timestamp("2026-11-24T12:00:00Z")
    ms = [int((now - pd.Timedelta(seconds=2)).value // 1e6),
          int(pd.Timestamp("2023-05-02T00:00:00Z").value // 1e6)]  # fmt: skip
    findings = pd.DataFrame(
        {
            "detected_at": [now, now],
            "source": [{"timestamp": ms[0]}, {"timestamp": ms[1]}],
            "group": ["live", "kafka-7026"],
        }
    )
    per_minute = pd.DataFrame({"minute": [now.floor("1min")], "records": [5]})
    tp = views.throughput(per_minute, findings, Filters())
    assert tp["max_finding_latency_s"].max() == pytest.approx(2.0)
    assert tp["replayed_findings"].sum() == 1


def test_a_claim_without_a_generation_says_why() -> None:
    from groupwatch.dashboard.views.matrix import claim_words

    assert claim_words(3, "sticky", 1) == "3"
    assert claim_words(-1, "sticky", 1) == "none: StickyAssignor user data v0"
    assert claim_words(-1, "sticky", 1, claimed=False) == "none: nothing claimed"
    assert claim_words(None, None, 1).startswith("none: ConsumerProtocolSubscription v1")


def test_findings_over_time_are_bars_of_when_they_were_detected() -> None:
    """A replayed day's findings, records of 2023 detected now, are bars of the minutes they
    were detected in, each as wide as its bucket; those on replayed records are counted."""
    from groupwatch.dashboard import views

    now = pd.Timestamp("2026-11-24T12:00:00Z")
    old = int(pd.Timestamp("2023-05-02T00:00:00Z").value // 1_000_000)
    findings = views.with_event_time(
        pd.DataFrame(
            {
                "detected_at": [now, now, now - pd.Timedelta(minutes=1)],
                "source": [{"timestamp": old}, {"timestamp": old}, None],
                "severity": ["critical", "warning", "critical"],
            }
        )
    )
    over, step, replayed = views.findings_over_time(findings)
    assert step == pd.Timedelta(minutes=5) and replayed == 2
    assert set(over["bucket"]) <= {now.floor("5min"), (now - pd.Timedelta(minutes=1)).floor("5min")}
    fig = charts.stacked_bars(over, "bucket", "count", "severity", {}, "Findings", bucket=step)
    assert all(t["width"] == 300_000 and t["offset"] == 0 for t in fig["data"])
    lo, hi = (pd.Timestamp(v) for v in fig["layout"]["xaxis"]["range"])
    assert hi - lo == pd.Timedelta(hours=1) and lo < over["bucket"].min()
    assert over["bucket"].max() + step <= hi


def test_records_read_long_after_their_time_are_counted_apart() -> None:
    from groupwatch.dashboard.views.health import first_read, late_words, read_late

    now = pd.Timestamp("2026-11-24T12:00:00Z")
    per_minute = pd.DataFrame(
        {
            "minute": [pd.Timestamp("2023-05-02T00:00:00Z"), pd.Timestamp("2023-05-02T00:03:00Z"),
                       now - pd.Timedelta(minutes=30), now],
            "records": [4, 2, 5, 1],
        }
    )  # fmt: skip
    first = first_read(
        now - pd.Timedelta(minutes=10),
        pd.Series([now - pd.Timedelta(minutes=20)]),
        pd.Series([], dtype="datetime64[ns, UTC]"),
    )
    assert first == now - pd.Timedelta(minutes=20)
    live, late = read_late(per_minute, first)
    # Half an hour before the first batch is within the slack of a record's time.
    assert list(live["records"]) == [5, 1] and list(late["records"]) == [4, 2]
    assert late_words(late).startswith("6 group-metadata record(s) of 2023-05-02 00:00 to ")
    assert read_late(per_minute, None)[1].empty and late_words(late.iloc[0:0]) == ""
