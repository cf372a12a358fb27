"""Kafka is the oracle for the record decoder.

* The golden vectors are rebuilt through Kafka's serialisers and must equal the committed files,
  bytes and decoded JSON alike.
* Kafka's deserialisers read our encoder's bytes -- the vectors' and a few hundred generated
  values per run -- and re-serialise them to the very same bytes; Kafka's JSON view of them
  matches ours field by field. The generated values go to each of the project's releases'
  classes (4.3.1 and 4.4.0).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from groupwatch.protocol import (
    StickyUserData,
    decode_key,
    decode_value,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)
from groupwatch.protocol.jsonview import plain
from groupwatch.protocol.specs import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from groupwatch_dev.broker import KAFKA_VERSIONS, NEWEST_KAFKA_VERSION
from tests.unit.protocol import strategies as gs
from tests.vectors import build

pytestmark = pytest.mark.oracle

# Tagged fields Kafka prints with their default when they were not on the wire.
_KAFKA_TAG_DEFAULTS = (0, -1, None, "AAAAAAAAAAAAAAAAAAAAAA", [])


def harness(
    requests: Sequence[dict[str, Any]], kafka_version: str | None = None
) -> list[dict[str, Any]]:
    return build.java_harness(requests, kafka_version)


#: Tagged fields an older release does not know (it keeps them as unknown tags and its JSON view
#: has no such field), by release: record type id -> field names; the generated values sent to
#: that release leave them unwritten, so that its re-serialised bytes can equal ours.
_NEWER_TAGS: dict[str, dict[int, tuple[str, ...]]] = {
    "4.3.1": {17: ("stored_description_topology_epoch", "failed_description_topology_epoch")},
}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def assert_matches_kafka(kafka: Any, ours: Any, path: str = "") -> None:
    """Every field Kafka's JSON converter prints equals ours (camelCase -> snake_case)."""
    if isinstance(kafka, dict):
        assert isinstance(ours, dict), path
        for k, v in kafka.items():
            name = snake(k)
            if name not in ours:
                raise AssertionError(f"{path}.{name}: Kafka has {v!r}, we have no such field")
            if ours[name] is None and v in _KAFKA_TAG_DEFAULTS:
                continue  # an unwritten tagged field: None for us, the default for Kafka
            assert_matches_kafka(v, ours[name], f"{path}.{name}")
    elif isinstance(kafka, list):
        assert isinstance(ours, list) and len(kafka) == len(ours), path
        for i, (a, b) in enumerate(zip(kafka, ours, strict=True)):
            assert_matches_kafka(a, b, f"{path}[{i}]")
    else:
        assert kafka == ours, f"{path}: Kafka {kafka!r} != ours {ours!r}"


def test_vectors_rebuild_identically_through_kafka() -> None:
    rebuilt = build.build(harness)
    stored = build.stored()
    assert {v.path for v in rebuilt} == set(stored), "vector set differs; run tests.vectors.build"
    diffs = []
    for v in rebuilt:
        data, expected = stored[v.path]
        if dict(v.lines) != data:
            diffs.append(f"{v.path}: Kafka now writes different bytes")
        elif v.expected != expected:
            diffs.append(f"{v.path}: decoded JSON changed")
    assert not diffs, "\n".join(diffs)


def _requests(pairs: list[tuple[bytes, bytes | None]]) -> list[dict[str, Any]]:
    return [
        {"op": "decode_record", "key_hex": k.hex(), "value_hex": None if v is None else v.hex()}
        for k, v in pairs
    ]


def _check_answers(pairs: list[tuple[bytes, bytes | None]], answers: list[dict[str, Any]]) -> None:
    assert len(answers) == len(pairs)
    for (key, value), answer in zip(pairs, answers, strict=True):
        assert "error" not in answer, (key.hex(), answer)
        assert answer["key_hex"] == key.hex()
        rt, our_key = decode_key(key)
        assert_matches_kafka(answer["key"], plain(our_key), "key")
        if value is None:
            assert answer["value"] is None
            continue
        assert answer["value_hex"] == value.hex(), "Kafka re-serialised different bytes"
        version, our_value = decode_value(rt, value)
        assert answer["version"] == version
        assert_matches_kafka(answer["value"], plain(our_value), "value")


def _records_through_kafka(
    pairs: list[tuple[bytes, bytes | None]], kafka_version: str | None = None
) -> None:
    _check_answers(pairs, harness(_requests(pairs), kafka_version))


def test_kafka_reads_our_encoding_of_every_record_vector() -> None:
    pairs = []
    for path, (data, _) in build.stored().items():
        if not path.startswith("records/") or path.endswith("legacy_type0_v0"):
            continue
        key = data["key"]
        assert key is not None
        rt, k = decode_key(key)
        ours_k = encode_key(k, rt.id)
        value = data["value"]
        if value is None:
            pairs.append((ours_k, None))
            continue
        version, v = decode_value(rt, value)
        if path.endswith("v4_unknown_tag"):
            continue  # Kafka drops unknown tags when it re-serialises; bytes cannot match
        pairs.append((ours_k, encode_value(v, version, rt.id)))
    _records_through_kafka(pairs)


def _collect(strategy: Any, n: int) -> list[Any]:
    out: list[Any] = []

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def grab(x: Any) -> None:
        out.append(x)

    grab()
    return out


# ShareGroupPartitionMetadata (type 9) is gone from Kafka 4.3's serde: nothing to compare with.
_GENERATED_CASES = [c for c in gs.RECORD_CASES if c[0] != 9]

Pairs = list[tuple[bytes, bytes | None]]


def _generated_pairs(type_id: int, version: int, release: str) -> Pairs:
    samples = _collect(gs.records(type_id, version), 25)
    unknown_then = _NEWER_TAGS.get(release, {}).get(type_id, ())
    if unknown_then:
        samples = [(k, replace(v, **dict.fromkeys(unknown_then))) for k, v in samples]
    elif release == NEWEST_KAFKA_VERSION and type_id == 17:
        # the newest release's own tags written and left out alike
        written = {v.stored_description_topology_epoch is None for _, v in samples}
        assert written == {True, False}
    return [(encode_key(k, type_id), encode_value(v, version, type_id)) for k, v in samples]


@pytest.fixture(scope="module")
def generated_through_kafka() -> Callable[[int, int, str], tuple[Pairs, list[dict[str, Any]]]]:
    """Every case's generated records of one release through one call of Kafka's classes,
    made on the first case that asks for the release: a JVM per case was most of this
    module's time (about 4 s a case, 58 cases a release). Each case still checks its own
    records and answers, so a failure names its record type and version."""
    made: dict[str, dict[tuple[int, int], tuple[Pairs, list[dict[str, Any]]]]] = {}

    def answers(type_id: int, version: int, release: str) -> tuple[Pairs, list[dict[str, Any]]]:
        if release not in made:
            by_case = {c: _generated_pairs(*c, release) for c in _GENERATED_CASES}
            every = [p for pairs in by_case.values() for p in pairs]
            got = harness(_requests(every), release)
            assert len(got) == len(every)
            made[release] = {}
            at = 0
            for case, pairs in by_case.items():
                made[release][case] = (pairs, got[at : at + len(pairs)])
                at += len(pairs)
        return made[release][(type_id, version)]

    return answers


@pytest.mark.parametrize("release", KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
@pytest.mark.parametrize(("type_id", "version"), _GENERATED_CASES)
def test_kafka_reads_our_encoding_of_generated_records(
    type_id: int,
    version: int,
    release: str,
    generated_through_kafka: Callable[[int, int, str], tuple[Pairs, list[dict[str, Any]]]],
) -> None:
    pairs, answers = generated_through_kafka(type_id, version, release)
    assert pairs, "no generated records for this case"
    _check_answers(pairs, answers)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_kafka_reads_our_consumer_protocol(version: int) -> None:
    subs = _collect(gs.message_values(CONSUMER_PROTOCOL_SUBSCRIPTION, version), 40)
    asgs = _collect(gs.message_values(CONSUMER_PROTOCOL_ASSIGNMENT, version), 40)
    reqs = [{"op": "decode_subscription", "hex": encode_subscription(s).hex()} for s in subs]
    reqs += [{"op": "decode_assignment", "hex": encode_assignment(a).hex()} for a in asgs]
    answers = harness(reqs)
    for req, answer, ours in zip(reqs, answers, [*subs, *asgs], strict=True):
        assert "error" not in answer, answer
        assert answer["version"] == version
        assert answer["reencoded_hex"] == req["hex"]
        mine = plain(ours)
        mine.pop("version")
        if version == 0 and "owned_partitions" in mine:
            mine.pop("owned_partitions")  # Kafka's v0 JSON leaves out fields v0 lacks
        assert_matches_kafka(answer["message"], mine)
        if "view" in answer:  # Kafka's Subscription semantics for absent values
            view = answer["view"]
            expected_gen = ours.generation_id if version >= 2 and ours.generation_id >= 0 else None
            assert view["generation_id"] == expected_gen
            assert view["rack_id"] == (ours.rack_id or None)


def test_kafka_reads_our_assignor_user_data() -> None:
    sticky: list[StickyUserData] = _collect(gs.sticky_user_data, 60)
    reqs = [
        {
            "op": "decode_sticky",
            "hex": encode_sticky_user_data(u.previous_assignment, u.generation).hex(),
        }
        for u in sticky
    ]
    gens = [-1, 0, 7, 2**31 - 1]
    reqs += [
        {"op": "decode_coop", "hex": encode_cooperative_sticky_user_data(g).hex()} for g in gens
    ]
    answers = harness(reqs)
    for u, answer in zip(sticky, answers[: len(sticky)], strict=True):
        flat = [[tp.topic, p] for tp in u.previous_assignment for p in tp.partitions]
        assert answer["partitions"] == flat
        assert answer["generation"] == u.generation
    for g, answer in zip(gens, answers[len(sticky) :], strict=True):
        assert answer["generation"] == g


def test_kafka_rejects_what_we_reject() -> None:
    """Truncations of Kafka-built values fail in Kafka too (our stricter trailing-bytes rule is
    the one documented difference, so it is not asked here)."""
    pairs = []
    for path, (data, _) in build.stored().items():
        if path.startswith("records/group_metadata/v3") and data["value"] is not None:
            value = data["value"]
            assert data["key"] is not None
            pairs += [(data["key"], value[:cut]) for cut in range(2, len(value), 7)]
    answers = harness(
        [{"op": "decode_record", "key_hex": k.hex(), "value_hex": v.hex()} for k, v in pairs]
    )
    assert all("error" in a for a in answers), [a for a in answers if "error" not in a][:3]


def test_base64_is_kafkas() -> None:
    # Kafka's JSON formatters print bytes as standard Base64 with padding; so do we.
    assert plain(b"\x00\x01") == base64.b64encode(b"\x00\x01").decode() == "AAE="
    assert json.dumps(plain(b"")) == '""'
