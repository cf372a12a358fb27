"""Differential test: which owned partitions count, groupwatch's reading against Kafka's own.

Each case is a group as the leader receives it, member by member on the wire: the subscription's
version (0-3) and ``generationId``, its owned partitions, and the user data (none, StickyAssignor
V0/V1, CooperativeStickyAssignor's generation, or bytes neither reads).  Kafka's side is
``AbstractStickyAssignor.allSubscriptionsEqual`` of kafka-clients 4.3 itself, run by
``groupwatch.oracle.ClaimsOracle`` on the serialized subscriptions; groupwatch's side is the
findings' adapter (:func:`groupwatch.detect.expected.member_input`) and
:func:`groupwatch.assignor.claims.read_group_claims`, the reading both the re-run and the rules
use.  Compared: every member's owned partitions (in order), the partitions claimed by several
members at one generation, whether the subscriptions are equal, and the highest generation.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from urllib.parse import quote

import pytest

from groupwatch.assignor import TopicPartition as TP
from groupwatch.assignor.claims import read_claims, read_group_claims
from groupwatch.assignor.group import IndexedGroup
from groupwatch.detect.expected import member_input
from groupwatch.detect.model import MemberState
from tests.jvm import run_java

pytestmark = pytest.mark.oracle

RANDOM_CASES = 400


@dataclass(frozen=True)
class Wire:
    """One member as sent: ``user_data`` none/sticky0/sticky1/coop/raw; ``previous``: the
    partitions a StickyAssignor user data lists."""

    member_id: str
    version: int
    generation_id: int
    user_data: str
    user_data_generation: int
    topics: tuple[str, ...]
    owned: tuple[TP, ...] = ()
    previous: tuple[TP, ...] = ()


@dataclass(frozen=True)
class Case:
    label: str
    protocol: str
    partitions_per_topic: dict[str, int]
    members: tuple[Wire, ...]


def _s(text: str) -> str:
    return "s" + quote(text, safe="")


def _encode(case: Case) -> str:
    out = [_s(case.protocol), str(len(case.partitions_per_topic))]
    for topic, count in case.partitions_per_topic.items():
        out += [_s(topic), str(count)]
    out.append(str(len(case.members)))
    for w in case.members:
        out += [
            _s(w.member_id),
            str(w.version),
            str(w.generation_id),
            w.user_data,
            str(w.user_data_generation),
            str(len(w.topics)),
        ]
        out += [_s(t) for t in w.topics]
        for tps in (w.owned, w.previous):
            out.append(str(len(tps)))
            for t, p in tps:
                out += [_s(t), str(p)]
    return " ".join(out)


def _member_state(w: Wire) -> MemberState:
    """The member as groupwatch's decoder leaves it (fields the claim reading uses)."""
    kind = {"none": None, "sticky0": "sticky", "sticky1": "sticky", "coop": "cooperative-sticky"}
    user_data_kind = kind.get(w.user_data, "raw")
    has_user_data_generation = w.user_data in ("sticky1", "coop")
    return MemberState(
        member_id=w.member_id,
        group_instance_id=None,
        client_id=None,
        client_host=None,
        subscription_version=w.version,
        topics=w.topics,
        owned_partitions=w.owned if w.version >= 1 else (),
        subscription_generation=(
            w.generation_id if w.version >= 2 and w.generation_id >= 0 else None
        ),
        rack_id=None,
        user_data_kind=user_data_kind,
        user_data_generation=w.user_data_generation if has_user_data_generation else None,
        user_data_previous=w.previous if user_data_kind == "sticky" else None,
        assigned=(),
        subscription_error=None,
        assignment_error=None,
        claim=(),
        claim_generation=-1,
    )


def _ours(case: Case) -> dict[str, object]:
    members = [member_input(_member_state(w), case.protocol) for w in case.members]
    group = IndexedGroup(case.partitions_per_topic, members, None, case.protocol)
    reading = read_group_claims(group)
    owned = {
        group.member_ids[m]: [list(group.topic_partition(p)) for p in parts]
        for m, parts in reading.owned.items()
    }
    return {
        "equal": reading.all_subscriptions_equal,
        "max_generation": reading.max_generation,
        "owned": {w.member_id: owned[w.member_id] for w in case.members},
        "several": sorted(list(group.topic_partition(p)) for p in reading.claimed_by_several),
    }


def _kafkas(answer: dict[str, object], case: Case) -> dict[str, object]:
    # groupwatch leaves out claims on partitions the topic does not have (docs/assignor.md);
    # Kafka carries them, and they touch nothing else
    def real(tp: list[object]) -> bool:
        topic, p = tp
        assert isinstance(topic, str) and isinstance(p, int)
        return p < case.partitions_per_topic.get(topic, 0)

    owned = answer["owned"]
    several = answer["several"]
    assert isinstance(owned, dict) and isinstance(several, list)
    return {
        "equal": answer["equal"],
        "max_generation": answer["max_generation"],
        "owned": {m: [tp for tp in tps if real(tp)] for m, tps in owned.items()},
        "several": sorted(tp for tp in several if real(tp)),
    }


def _w(
    member_id: str,
    gen: int,
    parts: list[int],
    *,
    version: int = 3,
    topic: str = "t",
    topics: tuple[str, ...] = ("t",),
    user_data: str | None = None,
    user_data_generation: int | None = None,
) -> Wire:
    """A member of the table: claims ``parts`` of ``topic`` at ``gen``, the way a current client
    of the case's protocol writes them unless told otherwise."""
    tps = tuple(TP(topic, p) for p in parts)
    return Wire(
        member_id,
        version,
        gen,
        user_data or "",
        gen if user_data_generation is None else user_data_generation,
        topics,
        tps,
        tps,
    )


def _table() -> list[Case]:
    cases: list[Case] = []

    def add(label: str, members: list[Wire], counts: dict[str, int] | None = None) -> None:
        for protocol in ("cooperative-sticky", "sticky"):
            ms = tuple(members)
            cases.append(Case(f"{label} [{protocol}]", protocol, counts or {"t": 4, "u": 4}, ms))

    # the held-out group: A rejoins with generation -1 keeping its two, B claims its two at 7
    add("reset generation, uncontested", [_w("A", -1, [0, 1]), _w("B", 7, [2, 3])])
    add("reset generation, uncontested, B first", [_w("B", 7, [2, 3]), _w("A", -1, [0, 1])])
    add("reset generation, contested", [_w("A", -1, [0, 1]), _w("B", 7, [1, 2, 3])])
    add("lower generation, uncontested", [_w("A", 5, [0, 1]), _w("B", 7, [2, 3])])
    add("lower generation, contested", [_w("A", 5, [0, 1]), _w("B", 7, [0, 2, 3])])
    add("equal generations", [_w("A", 7, [0, 1]), _w("B", 7, [2, 3])])
    add("same generation, same partition", [_w("A", 7, [0, 1]), _w("B", 7, [1, 2, 3])])
    add("tie, then a higher claim", [_w("A", 5, [0]), _w("B", 5, [0]), _w("C", 7, [0, 1])])
    add("higher claim, then a tie below it", [_w("C", 7, [0, 1]), _w("A", 5, [0]), _w("B", 5, [0])])
    add("no generation on either", [_w("A", -1, [0, 1]), _w("B", -1, [1, 2])])
    add(
        "unequal subscriptions, lower generation",
        [_w("A", 5, [0, 1], topics=("t", "u")), _w("B", 7, [0, 2, 3])],
    )
    add(
        "unequal subscriptions, reset generation",
        [_w("A", -1, [0, 1], topics=("t", "u")), _w("B", 7, [2, 3])],
    )
    # generations carried elsewhere than the subscription
    cases.append(
        Case(
            "cooperative v1, generation only in user data",
            "cooperative-sticky",
            {"t": 4},
            (
                _w("A", 5, [0, 1], version=1, user_data="coop"),
                _w("B", 5, [1, 2], version=1, user_data="coop"),
            ),
        )
    )
    cases.append(
        Case(
            "cooperative v2 reset, user data keeps 6",
            "cooperative-sticky",
            {"t": 4},
            (_w("A", -1, [0, 1], user_data="coop", user_data_generation=6), _w("B", 7, [1, 2, 3])),
        )
    )
    cases.append(
        Case(
            "cooperative, no user data, no generation",
            "cooperative-sticky",
            {"t": 4},
            (_w("A", -1, [0, 1], user_data="none"), _w("B", 7, [1, 2, 3])),
        )
    )
    cases.append(
        Case(
            "cooperative, unreadable user data",
            "cooperative-sticky",
            {"t": 4},
            (
                _w("A", -1, [0, 1], version=1, user_data="raw"),
                _w("B", -1, [1, 2], version=1, user_data="coop", user_data_generation=3),
            ),
        )
    )
    cases.append(
        Case(
            "sticky v0 user data (no generation)",
            "sticky",
            {"t": 4},
            (
                _w("A", 5, [0, 1], version=0, user_data="sticky0"),
                _w("B", 5, [1, 2], version=0, user_data="sticky1"),
            ),
        )
    )
    cases.append(
        Case(
            "sticky user data behind the subscription",
            "sticky",
            {"t": 4},
            (
                _w("A", 7, [0, 1], user_data="sticky1", user_data_generation=6),
                _w("B", 7, [1, 2], user_data="sticky1"),
            ),
        )
    )
    cases.append(
        Case(
            "sticky, subscription v1 has no generationId",
            "sticky",
            {"t": 4},
            (
                _w("A", 5, [0, 1], version=1, user_data="sticky1"),
                _w("B", 5, [1, 2], version=1, user_data="sticky1"),
            ),
        )
    )
    return [_filled(c) for c in cases]


def _filled(case: Case) -> Case:
    """Members given no user data kind get the one the case's protocol writes."""
    default = "sticky1" if case.protocol == "sticky" else "coop"
    members = tuple(
        w
        if w.user_data
        else Wire(
            w.member_id,
            w.version,
            w.generation_id,
            default,
            w.user_data_generation,
            w.topics,
            w.owned,
            w.previous,
        )
        for w in case.members
    )
    return Case(case.label, case.protocol, case.partitions_per_topic, members)


def _random_cases(seed: int, n: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        protocol = rng.choice(("sticky", "cooperative-sticky"))
        counts = {"t": rng.randint(1, 5), "u": rng.randint(0, 3)}
        all_tps = [TP(t, p) for t, c in counts.items() for p in range(c + 1)]  # one past the end
        members = []
        for k in range(rng.randint(1, 5)):
            topics = ("t", "u") if rng.random() < 0.7 else rng.choice((("t",), ("u",), ("t", "x")))
            version = rng.choice((0, 1, 2, 3, 3, 3))
            generation = rng.choice((-1, -1, 3, 5, 7, 7))
            kinds = (
                ("none", "sticky0", "sticky1", "raw")
                if protocol == "sticky"
                else ("none", "coop", "coop", "raw")
            )
            claims = rng.sample(all_tps, rng.randint(0, min(4, len(all_tps))))
            if claims and rng.random() < 0.1:
                claims.append(claims[0])  # a member listing a partition twice
            ud_generation = generation if rng.random() < 0.7 else rng.choice((-1, 4, 6, 8))
            members.append(
                Wire(
                    f"m{k}-{rng.getrandbits(16):x}",
                    version,
                    generation,
                    rng.choice(kinds),
                    ud_generation,
                    topics,
                    tuple(claims),
                    tuple(claims),
                )
            )
        cases.append(Case(f"random {seed}/{i}", protocol, counts, tuple(members)))
    return cases


def _compare(cases: list[Case]) -> None:
    lines = run_java(
        "groupwatch.oracle.ClaimsOracle", stdin="".join(_encode(c) + "\n" for c in cases)
    )
    answers = [json.loads(line) for line in lines.splitlines()]
    assert len(answers) == len(cases)
    for case, answer in zip(cases, answers, strict=True):
        assert "error" not in answer, (case.label, answer)
        assert _ours(case) == _kafkas(answer, case), case.label


def test_claims_read_as_kafka_reads_them_table() -> None:
    _compare(_table())


def test_claims_read_as_kafka_reads_them_random() -> None:
    _compare(_random_cases(61, RANDOM_CASES))


def test_the_held_out_reset_claim_is_kept_by_kafka_4() -> None:
    """The cooperative group whose member rejoins at generation -1 keeping its partitions:
    Kafka 4.x keeps both members' claims (only 2.x-3.4 cleared a lower generation's)."""
    case = _table()[0]
    answer = json.loads(run_java("groupwatch.oracle.ClaimsOracle", stdin=_encode(case) + "\n"))
    assert answer["owned"] == {"A": [["t", 0], ["t", 1]], "B": [["t", 2], ["t", 3]]}
    members = [member_input(_member_state(w), case.protocol) for w in case.members]
    claims = read_claims(case.protocol, case.partitions_per_topic, members)
    assert all(v.kept for v in claims.verdicts.values())
    assert claims.owner == {TP("t", 0): "A", TP("t", 1): "A", TP("t", 2): "B", TP("t", 3): "B"}
