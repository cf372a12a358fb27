"""Consumer-group members run by Kafka's own Java client (any assignor, cooperative included).

A thin driver around ``groupwatch.demo.GroupMembers`` (jvm/kafka): one JVM hosts any number of
members; this side sends commands and tracks what each member reports it owns.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupwatch_dev.member_host import MemberHost


class JavaGroupMembers(MemberHost):
    """Start with ``with JavaGroupMembers(bootstrap) as members: members.join(...)``."""

    def __init__(self, bootstrap: str, *, classpath: str | None = None) -> None:
        """``classpath``: another release's harness classpath (its clients), else jvm/kafka's."""
        super().__init__("groupwatch.demo.GroupMembers", bootstrap, classpath=classpath)

    def join(
        self,
        name: str,
        group: str,
        topics: Iterable[str],
        assignor: str,
        *,
        instance_id: str | None = None,
        protocol: str = "classic",
        release: str | None = None,
    ) -> None:
        """Start member ``name`` in ``group`` with Kafka's assignor of that protocol name.

        ``protocol="consumer"`` joins with KIP-848's protocol, where ``assignor`` names the
        broker's assignor (``uniform`` or ``range``).  ``release`` (classic): the member
        assigns with ``groupwatch.demo.ReleaseAssignor`` (range), ``"fail"`` making every
        ``assign()`` throw, ``"delay:MS"`` taking MS first, and polls again after a poll that
        threw (``note NAME poll failed: ...`` on the host's output each time).
        """
        extra = f" instance={instance_id}" if instance_id else ""
        if protocol != "classic":
            extra += f" protocol={protocol}"
        if release is not None:
            extra += f" release={release}"
        self._send(f"join {name} {group} {','.join(topics)} {assignor}{extra}")
