"""The old clients' own account of a group, read from their log lines (lines as kafka-clients
2.2.2 and 3.0.0 wrote them in the reproductions, topic names shortened)."""

from __future__ import annotations

from groupwatch_dev.legacy_clients import read_client_log

C22 = "INFO org.apache.kafka.clients.consumer.internals.{} - [Consumer clientId={}, groupId=g] {}"
COORD = "ConsumerCoordinator"
C30 = "INFO org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - [Consumer clientId={}, groupId=g] {}"  # noqa: E501


def line22(who: str, text: str, cls: str = "AbstractCoordinator") -> str:
    return "10:56:46.136 [member-x] " + C22.format(cls, who, text)


def test_a_2_2_release_joins_then_sets_its_partitions() -> None:
    lines = [
        line22("C1", "Successfully joined group with generation 2"),
        line22("C1", "Setting newly assigned partitions: t-2, t-3", COORD),
        line22("C2", "Successfully joined group with generation 2"),
        line22("C2", "Setting newly assigned partitions: t-0, t-1", COORD),
        "10:56:51.228 [kafka-coordinator-heartbeat-thread | g] WARN org.apache.kafka.clients."
        "consumer.internals.AbstractCoordinator - [Consumer clientId=C1, groupId=g] This member "
        "will leave the group because consumer poll timeout has expired.",
        line22("C2", "Successfully joined group with generation 3"),
        line22("C2", "Setting newly assigned partitions: t-0, t-1, t-2, t-3", COORD),
        line22("C1", "Successfully joined group with generation 4"),
        line22("C2", "Successfully joined group with generation 4"),
        line22("C1", "Setting newly assigned partitions: t-0, t-2, t-3", COORD),
        line22("C2", "Setting newly assigned partitions: t-1, t-2, t-3", COORD),
        line22("C3", "Setting newly assigned partitions: t-9", COORD),  # no join
        "an unrelated line",
    ]
    log = read_client_log(lines)
    assert log.members["C1"].joined == [2, 4]
    assert log.members["C2"].assigned == {
        2: {"t-0", "t-1"},
        3: {"t-0", "t-1", "t-2", "t-3"},
        4: {"t-1", "t-2", "t-3"},
    }
    assert log.generations() == [2, 3, 4]
    assert log.shared() == {4: {"t-2": {"C1", "C2"}, "t-3": {"C1", "C2"}}}
    assert log.lines_with("poll timeout") and not log.members["C3"].assigned
    assert len(log.lines_with("Successfully joined group")) == 5


def test_a_3_0_release_joins_syncs_and_refuses_its_assignment() -> None:
    def gen(n: int, who: str) -> str:
        return f"Generation{{generationId={n}, memberId='{who}-f5a7', protocol='coop'}}"

    def line(who: str, text: str, level: str = "INFO") -> str:
        return "11:00:51.878 [member-x] " + C30.format(who, text).replace("INFO", level, 1)

    refusal = (
        "With the COOPERATIVE protocol, owned partitions cannot be reassigned to other members;"
        " however the assignor has reassigned partitions [t-3, t-5] which are still owned by"
        " some members"
    )
    lines = [
        line("A", f"Successfully joined group with generation {gen(3, 'A')}"),
        line("A", f"Successfully synced group in generation {gen(3, 'A')}"),
        line("A", "Notifying assignor about the new Assignment(partitions=[t-3, t-4, t-5])"),
        line("B", f"Successfully joined group with generation {gen(5, 'B')}"),
        line("B", refusal, "ERROR"),
        line("B", f"Successfully joined group with generation {gen(5, 'B')}"),  # the retry
        line("B", refusal, "ERROR"),
        line("B", f"Successfully joined group with generation {gen(6, 'B')}"),
        line("B", refusal, "ERROR"),
        line("B", "Finished assignment for group at generation 7: {B-1=Assignment(partitions=[])}"),
    ]
    log = read_client_log(lines)
    a, b = log.members["A"], log.members["B"]
    assert (a.joined, a.synced, a.assigned) == ([3], [3], {3: {"t-3", "t-4", "t-5"}})
    assert b.joined == [5, 6] and b.refused == [5, 6]
    assert b.led == {7: "{B-1=Assignment(partitions=[])}"}
    assert len(log.lines_with("owned partitions cannot be reassigned")) == 3
