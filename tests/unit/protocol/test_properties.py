"""Properties: encode -> decode is the identity for every record type and version (values
generated from the schema tables), and no byte string makes a decoder raise anything but
DecodeError."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupwatch.protocol import (
    DecodeError,
    decode_assignment,
    decode_key,
    decode_record,
    decode_sticky_user_data,
    decode_subscription,
    decode_value,
    encode_assignment,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
    to_json_dict,
)
from groupwatch.protocol.models import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from groupwatch.protocol.specs import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    RECORD_TYPES,
)
from tests.unit.protocol import strategies as gs

QUICK = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(("type_id", "version"), gs.RECORD_CASES)
def test_record_round_trip(type_id: int, version: int) -> None:
    @QUICK
    @given(gs.records(type_id, version))
    def check(kv: tuple[Any, Any]) -> None:
        key, value = kv
        kb = encode_key(key, type_id)
        vb = encode_value(value, version, type_id)
        rt, k2 = decode_key(kb)
        assert (rt.id, k2) == (type_id, key)
        assert decode_value(rt, vb) == (version, value)
        rec = decode_record(kb, vb)
        assert rec.error is None
        to_json_dict(rec)  # the JSON view never fails on a decodable record

    check()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_round_trip(version: int) -> None:
    @QUICK
    @given(
        gs.message_values(CONSUMER_PROTOCOL_SUBSCRIPTION, version),
        gs.message_values(CONSUMER_PROTOCOL_ASSIGNMENT, version),
    )
    def check(sub: ConsumerProtocolSubscription, asg: ConsumerProtocolAssignment) -> None:
        assert decode_subscription(encode_subscription(sub)) == sub
        assert decode_assignment(encode_assignment(asg)) == asg

    check()


@QUICK
@given(gs.sticky_user_data)
def test_sticky_user_data_round_trip(ud: Any) -> None:
    data = encode_sticky_user_data(ud.previous_assignment, ud.generation)
    assert decode_sticky_user_data(data) == ud


# --- nothing but DecodeError --------------------------------------------------------------------

_DECODERS = [
    lambda b: decode_key(b),
    lambda b: decode_subscription(b),
    lambda b: decode_assignment(b),
    lambda b: decode_sticky_user_data(b),
    *[(lambda b, rt=rt: decode_value(rt, b)) for rt in RECORD_TYPES.values()],
]


def _only_decode_error(data: bytes) -> int:
    """Run every decoder on ``data``; anything but DecodeError fails.  Returns the case count."""
    for decode in _DECODERS:
        try:
            decode(data)
        except DecodeError:
            pass
    rec = decode_record(data[:8], data[8:])
    assert rec.error is None or rec.error.kind != "internal_error", rec.error
    to_json_dict(rec)
    return len(_DECODERS) + 1


def _valid_encodings() -> st.SearchStrategy[bytes]:
    def enc(case: tuple[int, int]) -> st.SearchStrategy[bytes]:
        type_id, version = case
        return gs.records(type_id, version).map(lambda kv: encode_value(kv[1], version, type_id))

    subs = st.sampled_from([0, 1, 2, 3]).flatmap(
        lambda v: gs.message_values(CONSUMER_PROTOCOL_SUBSCRIPTION, v).map(encode_subscription)
    )
    return st.sampled_from(gs.RECORD_CASES).flatmap(enc) | subs


def mutated() -> st.SearchStrategy[bytes]:
    return _valid_encodings().flatmap(gs.corrupted)


fuzz_bytes = st.binary(max_size=64) | mutated()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(fuzz_bytes)
def test_fuzz_quick_only_decode_error(data: bytes) -> None:
    _only_decode_error(data)


def test_every_truncation_of_a_valid_record_is_an_error() -> None:
    from tests.vectors import build

    for path, (data, _) in build.stored().items():
        if not path.startswith("records/") or data["value"] is None:
            continue
        value = data["value"]
        for cut in range(len(value)):
            rec = decode_record(data["key"], value[:cut])
            assert rec.error is not None and rec.error.kind == "truncated", (path, cut, rec.error)


@pytest.mark.slow
def test_fuzz_slow_100k(request: pytest.FixtureRequest) -> None:
    # scripts/test's default run deselects "slow" (-m "not slow"), but a run given its own
    # arguments (scripts/test --quick, scripts/test tests/unit, a bare pytest) does not: the
    # test skips itself unless `-m slow` selects it.
    expr = str(request.config.getoption("markexpr") or "")
    if "slow" not in expr or "not slow" in expr:
        pytest.skip("100k-case fuzz: run with -m slow")
    target = int(os.environ.get("GW_FUZZ_CASES", "100000"))
    count = 0

    @settings(
        max_examples=target, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(fuzz_bytes)
    def run(data: bytes) -> None:
        nonlocal count
        _only_decode_error(data)
        count += 1

    run()
    print(f"\nfuzz: {count} byte strings, each through {len(_DECODERS) + 1} decoders")
    assert count >= target
