"""The generated readers agree with the interpreter: same value and end on bytes the generated
code accepts, and never a value where the interpreter sees an error.

The interpreter is the reference (the vectors and Kafka's serialisers pin it); the generated
code is an optimisation of it, so every message and version is checked against it on random
values, on corrupted encodings, and on every cut of the committed vectors.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupwatch.protocol import codec, decode_record, to_json_dict
from groupwatch.protocol.errors import DecodeError
from groupwatch.protocol.schema import MessageSpec
from groupwatch.protocol.specs import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    RECORD_TYPES,
)
from groupwatch.protocol.user_data import COOPERATIVE_STICKY_USER_DATA, STICKY_USER_DATA
from tests.unit.protocol import strategies as gs
from tests.vectors import build


def _specs() -> list[MessageSpec]:
    found: dict[int, MessageSpec] = {}
    for rt in RECORD_TYPES.values():
        for spec in (rt.key, rt.value):
            if spec is not None:
                found[id(spec)] = spec
    for spec in (
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        CONSUMER_PROTOCOL_ASSIGNMENT,
        STICKY_USER_DATA,
        COOPERATIVE_STICKY_USER_DATA,
    ):
        found[id(spec)] = spec
    return list(found.values())


CASES = [(spec, v) for spec in _specs() for v in gs.versions(spec)]


def _outcome(read: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", read(data, 0)
    except DecodeError as e:
        return "error", (e.kind, e.field_path, e.byte_offset, e.message)


@pytest.mark.parametrize(("spec", "version"), CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_generated_reader_agrees_with_the_interpreter(spec: MessageSpec, version: int) -> None:
    fast = codec.generated_reader(spec, version)
    exact = codec.interpreted(spec, version)[0]
    read = codec.compiled(spec, version)[0]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(gs.message_values(spec, version).flatmap(lambda v: _bytes_and_mutants(spec, version, v)))
    def check(case: tuple[bytes, bytes]) -> None:
        clean, data = case
        # A clean encoding: both read it, to the same value and the same end.
        assert fast(clean, 0) == exact(clean, 0)
        try:
            got = fast(data, 0)
        except Exception:  # noqa: BLE001 - rejected: the fallback decides
            pass
        else:
            assert _outcome(exact, data) == ("ok", got)
        # Through the fallback, values and errors are exactly the interpreter's.
        assert _outcome(read, data) == _outcome(exact, data)

    check()


def _bytes_and_mutants(
    spec: MessageSpec, version: int, value: Any
) -> st.SearchStrategy[tuple[bytes, bytes]]:
    out = bytearray()
    codec.encode_body(spec, version, value, out)
    clean = bytes(out)
    return gs.corrupted(clean, min_ops=0, max_ops=3).map(lambda data: (clean, data))


def _interpreted_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "compiled", codec.interpreted)


def test_every_cut_and_flip_of_the_vectors_decodes_as_the_interpreter_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases: list[tuple[bytes, bytes | None]] = []
    for path, (data, _) in sorted(build.stored().items()):
        if not path.startswith("records/") or data["value"] is None or data["key"] is None:
            continue
        key, value = data["key"], data["value"]
        cases += [(key, value[:cut]) for cut in range(len(value) + 1)]
        # Flipping each byte's top bit turns lengths and counts negative or huge.
        cases += [
            (key, value[:i] + bytes([value[i] ^ 0x80]) + value[i + 1 :]) for i in range(len(value))
        ]
    assert len(cases) > 1000
    fast = [to_json_dict(decode_record(k, v)) for k, v in cases]
    _interpreted_only(monkeypatch)
    exact = [to_json_dict(decode_record(k, v)) for k, v in cases]
    mismatches = [c for c, f, e in zip(cases, fast, exact, strict=True) if f != e]
    assert not mismatches, mismatches[:3]
    # The cases are not all errors: the comparison covers decoded values too.
    assert sum(1 for line in exact if not line.get("error")) > 50
