"""The one-command demo: a broker, real groups misbehaving a little, replayed incidents, the
job until caught up, a summary of findings, and the dashboard.

``python -m groupwatch_dev.demo.main`` (what ``scripts/run`` starts).  Every step prints progress;
Ctrl-C stops the dashboard, the members and the broker.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from groupwatch import paths
from groupwatch.stopping import sigterm_as_interrupt
from groupwatch_dev.broker import LocalBroker
from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic, produce, replay
from groupwatch_dev.scenarios.builder import LIBRARY, load, raw_records

MIRROR = "groupwatch-demo-incidents"
TOPIC = "demo-orders"
PARTITIONS = 6
#: Incidents replayed into the mirror topic: a double assignment and a cooperative violation.
INCIDENTS = ("incidents/kafka_7026.json", "incidents/kafka_13419.json")


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def real_groups(bootstrap: str) -> None:
    """Groups of Kafka's own Java client: scale out, and a member that stalls and rejoins."""
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce(bootstrap, TOPIC, [(None, b"order-%d" % i) for i in range(120)])
    with JavaGroupMembers(bootstrap) as members:
        say("group demo-orders-etl (cooperative-sticky): scaling out to 3 members")
        names = ["etl-a", "etl-b", "etl-c"]
        for i, name in enumerate(names):
            members.join(name, "demo-orders-etl", [TOPIC], "cooperative-sticky")
            members.wait_covered(names[: i + 1], PARTITIONS)
        say("group demo-orders-etl: etl-a stalls past its poll interval, is removed, rejoins")
        members.stall("etl-a", 9000)
        members.wait_covered(names[1:], PARTITIONS, timeout=60)
        members.wait_covered(names, PARTITIONS, timeout=60)
        say("group demo-billing (range, eager): 2 members, one leaves")
        members.join("bill-a", "demo-billing", [TOPIC], "range")
        members.join("bill-b", "demo-billing", [TOPIC], "range")
        members.wait_covered(["bill-a", "bill-b"], PARTITIONS)
        members.leave("bill-b")
        members.wait_covered(["bill-a"], PARTITIONS)


def incident_records() -> Iterator[dict[str, object]]:
    """The replayed incidents' raw records, from the scenario library."""
    for name in INCIDENTS:
        yield from raw_records(load(LIBRARY / name))


def replay_incidents(bootstrap: str) -> None:
    create_topic(bootstrap, MIRROR, 50)
    # Event time drives the cross-snapshot findings: the records keep the incident's own clock.
    count = replay(bootstrap, MIRROR, incident_records())
    say(f"replayed {count} records of {', '.join(Path(n).stem for n in INCIDENTS)} into {MIRROR}")


def main() -> int:
    # `kill` cleans up like Ctrl-C: no broker or dashboard is left behind.
    with sigterm_as_interrupt():
        return _demo()


def _demo() -> int:
    # The demo starts from nothing every time (its own broker, tables and checkpoints), so a
    # second run shows the same findings instead of replayed incidents twice.
    home = paths.home() / "demo"
    shutil.rmtree(home, ignore_errors=True)
    broker = LocalBroker("demo")
    say("starting a fresh local Kafka broker for the demo")
    state = broker.start(fresh=True)
    bootstrap = state.bootstrap
    say(f"broker at {bootstrap}")
    dashboard: subprocess.Popen[bytes] | None = None
    try:
        real_groups(bootstrap)
        replay_incidents(bootstrap)
        say("running the job until it has caught up (Spark start-up takes a while)")
        exe = Path(sys.executable).parent / "groupwatch"
        job = subprocess.run(
            [
                str(exe),
                "run",
                "--once",
                "--set",
                f"source.bootstrap_servers={bootstrap}",
                "--set",
                f"source.topic=__consumer_offsets,{MIRROR}",
                "--set",
                f"delta.root={home / 'delta'}",
                "--set",
                f"checkpoint.root={home / 'checkpoints'}",
                "--set",
                "metrics.port=0",
            ],
            check=False,
        )
        if job.returncode != 0:
            say(f"the job failed with exit code {job.returncode}")
            return job.returncode
        say("serving the dashboard (Ctrl-C stops everything)")
        dashboard = subprocess.Popen([str(exe), "dashboard", "--delta-root", str(home / "delta")])
        print("dashboard: http://127.0.0.1:8050/", flush=True)
        dashboard.wait()
        return dashboard.returncode
    except KeyboardInterrupt:
        say("stopping")
        return 0
    finally:
        if dashboard is not None and dashboard.poll() is None:
            dashboard.terminate()
            dashboard.wait(timeout=10)
        broker.stop()
        say("broker stopped")


if __name__ == "__main__":
    raise SystemExit(main())
