"""``groupwatch broker start|status|stop``: the local KRaft broker, by hand."""

from __future__ import annotations

import argparse
import sys

from groupwatch_dev.broker import DEFAULT_KAFKA_VERSION, KAFKA_VERSIONS, BrokerError, LocalBroker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["start", "status", "stop"])
    parser.add_argument("--name", default="broker", help="run folder name (default: broker)")
    parser.add_argument("--fresh", action="store_true", help="start: wipe the data first")
    parser.add_argument(
        "--kafka-version",
        choices=KAFKA_VERSIONS,
        default=DEFAULT_KAFKA_VERSION,
        help=f"start: the Kafka release (default {DEFAULT_KAFKA_VERSION}; the newer one is "
        "fetched by scripts/setup --tests)",
    )


def run(args: argparse.Namespace) -> int:
    broker = LocalBroker(args.name, kafka_version=args.kafka_version)
    try:
        if args.action == "start":
            state = broker.start(fresh=args.fresh)
            print(state.bootstrap)
            print(f"broker pid {state.pid}, data in {broker.dir}", file=sys.stderr)
            return 0
        if args.action == "status":
            live = broker.running()
            if live is None:
                print("not running", file=sys.stderr)
                return 3
            print(live.bootstrap)
            return 0
        stopped = broker.stop()
        print("stopped" if stopped else "not running", file=sys.stderr)
        return 0
    except BrokerError as exc:
        print(f"groupwatch broker: {exc}", file=sys.stderr)
        return 1
