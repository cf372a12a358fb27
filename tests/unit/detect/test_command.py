"""``groupwatch analyze``: the command-line contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.cli import main
from groupwatch_dev.scenarios.builder import decoded_lines, load, scenario_files

KEYS = [
    "finding_id",
    "kind",
    "severity",
    "group",
    "generation",
    "topic",
    "partition",
    "member",
    "members",
    "partitions",
    "detail",
    "evidence",
    "source",
]


def scenario(stem: str) -> dict[str, object]:
    return load(next(p for p in scenario_files() if p.stem == stem))


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_findings_in_the_contract_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_lines(tmp_path / "in.jsonl", decoded_lines(scenario("kafka_7026")))
    parts = tmp_path / "p.json"
    parts.write_text('{"test": 1}')
    assert main(["analyze", str(src), "--partitions", str(parts)]) == 0
    out, err = capsys.readouterr()
    found = [json.loads(line) for line in out.splitlines()]
    assert [list(f) for f in found] == [KEYS] * len(found)
    overlap = next(f for f in found if f["kind"] == "assignment_overlap")
    assert overlap["severity"] == "critical" and overlap["generation"] == 4
    assert (overlap["topic"], overlap["partition"], overlap["member"]) == ("test", 0, None)
    assert overlap["members"] == ["C2-1", "C1-1"]
    assert overlap["partitions"] == [{"topic": "test", "partitions": [0]}]
    assert set(overlap["source"]) == {"topic", "partition", "offset", "timestamp"}
    assert overlap["source"]["topic"] == "__consumer_offsets"
    assert "critical: 1" in err and "warning: 2" in err and "info: 0" in err


def test_bad_input_is_reported_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = decoded_lines(scenario("kafka_12984"))
    broken = dict(good[1])
    broken["value"] = {"generation": "x", "members": 3}
    src = tmp_path / "in.jsonl"
    src.write_text(
        "not json\n[1, 2]\n" + "".join(json.dumps(x) + "\n" for x in [good[0], broken, *good]),
        encoding="utf-8",
    )
    assert main(["analyze", str(src)]) == 0
    out, err = capsys.readouterr()
    found = [json.loads(line) for line in out.splitlines()]
    errors = [f for f in found if f["kind"] == "decode_error"]
    assert len(errors) == 3 and all(f["severity"] == "error" for f in errors)
    assert any(f["kind"] == "owned_overlap_without_generation" for f in found)
    assert "error: 3" in err


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    text = "".join(json.dumps(x) + "\n" for x in decoded_lines(scenario("kafka_14016")))
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["analyze", "-"]) == 0
    out, _ = capsys.readouterr()
    assert "cooperative_revocation_violation" in out


def test_unreadable_partitions_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('{"t": -1}')
    assert main(["analyze", "-", "--partitions", str(bad)]) == 2
    assert "non-negative" in capsys.readouterr().err


def _stuck_for(seconds: float) -> list[dict[str, Any]]:
    """A group that committed at generation 7, then nothing for ``seconds`` until generation 12
    (generations 8..11 skipped)."""

    def gen(n: int, t: float) -> dict[str, Any]:
        return {
            "group": "g",
            "generation": n,
            "protocol": "range",
            "version": 3,
            "time": t,
            "members": [{"id": "A-1", "version": 3, "topics": ["t"], "assigned": {"t": [0]}}],
        }

    commit = {"commit": {"group": "g", "topic": "t", "partition": 0}, "time": 1.0}
    return decoded_lines({"records": [gen(7, 0), commit, gen(12, 1.0 + seconds)]})


def test_the_thresholds_are_the_jobs_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--set detect.KEY=VALUE`` (and ``--conf``) set analyze's thresholds as they set the
    job's: 15 s of silence is no stuck rebalance by the default 30 s, and is one by 10 s."""
    src = write_lines(tmp_path / "in.jsonl", _stuck_for(15))

    def stuck(*args: str) -> list[int]:
        assert main(["analyze", str(src), *args]) == 0
        out = capsys.readouterr().out
        found = [json.loads(line) for line in out.splitlines()]
        return [f["generation"] for f in found if f["kind"] == "rebalance_stuck"]

    assert stuck() == []
    assert stuck("--set", "detect.stuck_skipped_after_seconds=10") == [7]
    conf = tmp_path / "detect.toml"
    conf.write_text("[detect]\nstuck_skipped_after_seconds = 10\n")
    assert stuck("--conf", str(conf)) == [7]
    assert stuck("--set", "detect.stuck_skipped_generations=5") == []


def test_a_bad_setting_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "-", "--set", "detect.stuck_skipped_after_seconds=soon"]) == 2
    assert "stuck_skipped_after_seconds" in capsys.readouterr().err
