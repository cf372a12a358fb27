"""``groupwatch assign``: the JSON contract, and clear failures on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from groupwatch.assignor import command


def _run(tmp_path: Path, doc: object, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / "group.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    rc = command.run(parser.parse_args(["--input", str(path)]))
    out, err = capsys.readouterr()
    return rc, out, err


def test_assign_prints_sorted_assignment_and_withheld(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "protocol": "cooperative-sticky",
        "partitions_per_topic": {"topic": 3},
        "members": [
            {
                "member_id": "consumer1",
                "topics": ["topic"],
                "owned_partitions": [{"topic": "topic", "partitions": [1, 0]}],
                "generation": 1,
                "rack_id": None,
            },
            {
                "member_id": "consumer2",
                "topics": ["topic"],
                "owned_partitions": [{"topic": "topic", "partitions": [0, 2]}],
                "generation": 1,
            },
            {"member_id": "consumer3", "topics": ["topic"], "generation": None},
        ],
    }
    rc, out, _ = _run(tmp_path, doc, capsys)
    assert rc == 0
    assert json.loads(out) == {
        "assignment": {
            "consumer1": [{"topic": "topic", "partitions": [1]}],
            "consumer2": [{"topic": "topic", "partitions": [2]}],
            "consumer3": [],
        },
        "withheld": [{"topic": "topic", "partitions": [0]}],
    }


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"protocol": "range", "partitions_per_topic": {}, "members": []}, "protocol"),
        ({"protocol": "sticky", "partitions_per_topic": {"t": -1}, "members": []}, "negative"),
        (
            {
                "protocol": "sticky",
                "partitions_per_topic": {"t": 1},
                "members": [
                    {"member_id": "a", "topics": ["t"]},
                    {"member_id": "a", "topics": ["t"]},
                ],
            },
            "duplicate",
        ),
        (
            {"protocol": "sticky", "partitions_per_topic": {}, "members": [{"topics": []}]},
            "member_id",
        ),
    ],
)
def test_bad_input_fails_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, needle: str
) -> None:
    rc, out, err = _run(tmp_path, doc, capsys)
    assert rc != 0 and out == ""
    assert needle in err


def test_owned_partitions_of_missing_topics_are_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "protocol": "sticky",
        "partitions_per_topic": {"t": 2},
        "members": [
            {
                "member_id": "a",
                "topics": ["t", "gone"],
                "generation": 3,
                "owned_partitions": [
                    {"topic": "gone", "partitions": [0]},
                    {"topic": "t", "partitions": [1, 7]},
                ],
            }
        ],
    }
    rc, out, _ = _run(tmp_path, doc, capsys)
    assert rc == 0
    assert json.loads(out)["assignment"] == {"a": [{"topic": "t", "partitions": [0, 1]}]}
