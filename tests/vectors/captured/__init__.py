"""The captured corpus: records a real broker wrote to ``__consumer_offsets`` (see README.md)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

DIR = Path(__file__).resolve().parent

# One file per kind of group; each must be present (capture.py writes them, fleet.jsonl comes
# from the fleet suite's dump).
KINDS = ("classic", "consumer", "share", "streams", "streams-classic", "connect", "fleet")


@dataclass(frozen=True)
class Captured:
    kind: str
    line: int
    key: bytes
    value: bytes | None
    partition: int
    offset: int
    timestamp: int

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.line}"


def load(kind: str) -> list[Captured]:
    out = []
    path = DIR / f"{kind}.jsonl"
    for n, text in enumerate(path.read_text().splitlines(), 1):
        r = json.loads(text)
        out.append(
            Captured(
                kind,
                n,
                base64.b64decode(r["key"]),
                None if r["value"] is None else base64.b64decode(r["value"]),
                r["partition"],
                r["offset"],
                r["timestamp"],
            )
        )
    return out


def load_all() -> list[Captured]:
    return [rec for kind in KINDS for rec in load(kind)]
