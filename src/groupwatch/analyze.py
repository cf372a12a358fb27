"""``groupwatch analyze [FILE|-] [--partitions FILE.json] [--bootstrap-server HOST:PORT]
[--lag FILE] [--topic NAME] [--share-state FILE]``.

Reads JSON lines -- raw records as ``groupwatch decode`` reads them, or its output lines --
in order, and writes one JSON line per finding.  Exits 0 even on bad input; a summary line per
severity goes to stderr.  The command line's configuration (``--conf``, ``--set``) is read one
layer up, by :mod:`groupwatch.analyze_command`, which hands :func:`run` the job's thresholds.
Here, above the engine (``detect``, which does no I/O), because the command reads files and
asks the brokers (:mod:`groupwatch.broker_client`).
With ``--bootstrap-server`` the input's groups' lag is judged after the input against the
brokers' offsets (``docs/lag.md``): its findings go with the others, its ``partition_lag``
rows to ``--lag FILE``.

Records of ``__share_group_state`` (raw lines whose topic says so, or ``--topic
__share_group_state`` for a dump whose lines name none; decoded ``share_snapshot`` and
``share_update`` lines) are folded into each share partition's state; ``--share-state FILE``
writes it, one JSON line per share partition.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from groupwatch import broker_client
from groupwatch.detect.brokers import RECHECK_SECONDS, look_twice
from groupwatch.detect.catalogue import SEVERITIES
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.decoded import is_raw
from groupwatch.detect.engine import Analyzer
from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.lag.brokers import histories
from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.partitions import PartitionsError, StatedCounts, now_ms, parse_stated

if TYPE_CHECKING:
    from groupwatch.detect.lag.offline import InputLag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input",
        nargs="?",
        default="-",
        metavar="FILE|-",
        help="JSON lines: raw records (as `groupwatch decode` reads) or its output; - is stdin",
    )
    parser.add_argument(
        "--partitions",
        metavar="FILE.json",
        help='partition counts, {"topic": count, ...} (holding from now on) or '
        '{"partitions_per_topic": {...}, "as_of": ISO-8601 time | "always"}; otherwise '
        "inferred from the records",
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="look partition counts up on this broker (admin client; they judge records "
        "written from now on, and name topic ids), and ask it, after the input, whether the "
        "groups rebalance (rebalance_stuck), and judge the input's groups' lag against its "
        "log-end offsets (docs/lag.md)",
    )
    parser.add_argument(
        "--lag",
        metavar="FILE",
        help="with --bootstrap-server: write the partition_lag rows (JSON lines) to FILE",
    )
    parser.add_argument(
        "--topic",
        metavar="NAME",
        help="the topic of raw input lines that name none (default: __consumer_offsets); "
        "__share_group_state reads the share coordinator's records",
    )
    parser.add_argument(
        "--share-state",
        metavar="FILE",
        help="write each share partition's state from the input's __share_group_state records "
        "(JSON lines) to FILE",
    )


def load_counts_file(path: str | Path, read_ms: int | None = None) -> StatedCounts:
    """The file's counts, holding from its ``as_of`` (else from ``read_ms``, default now)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PartitionsError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PartitionsError(f"{path} is not valid JSON: {exc}") from exc
    return parse_stated(doc, now_ms() if read_ms is None else read_ms)


def _bad_line(number: int, reason: str) -> Finding:
    return Finding(
        kind="decode_error",
        group="",
        generation=None,
        detail=f"input line {number} is not a record: {reason}",
        source=Source(),
        evidence={"line": number, "error_kind": "bad_input_line", "message": reason},
        id_extra=f"line:{number}",
    )


def _lines(stream: IO[str]) -> Iterator[tuple[int, dict[str, Any] | str]]:
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, f"invalid JSON ({exc.msg})"
            continue
        yield number, doc if isinstance(doc, dict) else "not a JSON object"


def analyze_stream(
    stream: IO[str],
    out: IO[str],
    config: DetectorConfig,
    analyzer: Analyzer | None = None,
    lag: InputLag | None = None,
    topic: str | None = None,
) -> Counter[str]:
    """The command's loop: findings to ``out``, returns the count per severity; ``lag`` is
    fed the committed offsets and owners of the input; ``topic`` is the topic of raw lines that
    name none."""
    analyzer = analyzer or Analyzer(config)
    counts: Counter[str] = Counter()
    for number, line in _lines(stream):
        findings: Iterable[Finding]
        if isinstance(line, str):
            findings = [_bad_line(number, line)]
        else:
            if topic is not None and line.get("topic") is None and is_raw(line):
                line = {**line, "topic": topic}
            try:
                findings = _feed(analyzer, line, lag)
            except Exception as exc:  # noqa: BLE001 - bad input must never stop the command
                findings = [_bad_line(number, f"{type(exc).__name__}: {exc}")]
        _write(findings, out, counts)
    # The end of the input is the point where everything is read: modern groups are judged.
    _write(analyzer.finish(), out, counts)
    return counts


def _feed(analyzer: Analyzer, line: Mapping[str, Any], lag: InputLag | None) -> list[Finding]:
    if lag is None:
        return analyzer.feed(line)
    from groupwatch.detect.decoded import is_raw, record_from_raw

    if is_raw(line):
        record = record_from_raw(line)
        lag.record(record)
        findings = analyzer.feed_record(record)
        group = record.group
    else:
        lag.line(line)
        findings = analyzer.feed(line)
        key = line.get("key")
        group = key.get("group") if isinstance(key, Mapping) else None
        group = group if isinstance(group, str) else line.get("group")
    lag.after(group if isinstance(group, str) else None, analyzer)
    return findings


def _lag_at_brokers(
    analyzer: Analyzer,
    lag: InputLag,
    bootstrap: str,
    names: Mapping[str, str],
    counts: Counter[str],
    rows_to: str | None,
    rules: LagRules,
) -> None:
    """The input's groups' lag against the brokers' offsets now: findings, and rows to a file."""
    from groupwatch.detect.lag.judge import judge

    try:
        ends = broker_client.end_offsets(bootstrap, lag.partitions())
        end_of = {(e.topic, e.partition): e.end_offset for e in ends}
        # The oldest waiting record of each partition some group is behind on (the lowest
        # committed offset below the end: every group behind there waits for it or a later one).
        positions: dict[tuple[str, int], set[int]] = {}
        for (_, t, p), c in lag.book.commits.items():
            if c.offset < end_of.get((t, p), c.offset):
                positions.setdefault((t, p), set()).add(c.offset)
        times: dict[tuple[tuple[str, int], int], tuple[int, int]] = {}
        for round_ in range(max((len(v) for v in positions.values()), default=0)):
            wanted = {tp: sorted(v)[round_] for tp, v in positions.items() if len(v) > round_}
            for tp, found in broker_client.record_times(bootstrap, wanted).items():
                times[(tp, wanted[tp])] = found
    except PartitionsError as exc:
        print(f"groupwatch analyze: {exc}; lag not judged", file=sys.stderr)
        return
    owners = lag.owners(analyzer, names)
    verdicts = []
    for (group, topic, partition), commit in sorted(lag.book.commits.items()):
        tp = (topic, partition)
        first = times.get((tp, commit.offset))
        history = histories(
            [e for e in ends if (e.topic, e.partition) == tp],
            {tp: commit.offset},
            {} if first is None else {tp: first},
        ).get(tp, [])
        verdicts.append(judge(commit, history, owners.get(group, {}).get(tp), rules))
    _write([v.opened for v in verdicts if v.opened is not None], sys.stdout, counts)
    if rows_to:
        with open(rows_to, "w", encoding="utf-8") as fh:
            for v in verdicts:
                fh.write(json.dumps(v.row.to_row(), ensure_ascii=False) + "\n")
    behind = sum(1 for v in verdicts if v.row.lag_records)
    print(
        f"groupwatch analyze: lag: {len(verdicts)} partition(s) committed, {behind} behind",
        file=sys.stderr,
    )


def _share_states(
    analyzer: Analyzer,
    to: str | None,
    bootstrap: str | None,
    names: Mapping[str, str],
    counts: Counter[str],
) -> None:
    """Say how many share partitions the input's share state records left (and, with the
    brokers, their share lag against the end offsets now, and the stalls those show); write
    them to ``to``."""
    if analyzer.share_states_seen == 0:
        return
    states = list(analyzer.share_states)
    ends: dict[tuple[str, int], int] = {}
    if bootstrap is not None:
        wanted = [
            (names[s.key.topic_id], s.key.partition) for s in states if s.key.topic_id in names
        ]
        try:
            asked = now_ms()
            ends = {
                (e.topic, e.partition): e.end_offset
                for e in broker_client.end_offsets(bootstrap, wanted)
            }
        except PartitionsError as exc:
            print(f"groupwatch analyze: {exc}; share lag not known", file=sys.stderr)
        else:
            ids = {name: tid for tid, name in names.items()}
            by_id = {(ids[t], p): end for (t, p), end in ends.items() if t in ids}
            _write(analyzer.share_look(by_id, asked), sys.stdout, counts)

    def end_of(topic_id: str, partition: int) -> int | None:
        name = names.get(topic_id)
        return None if name is None else ends.get((name, partition))

    rows = [
        s.to_row(end_of(s.key.topic_id, s.key.partition), names.get(s.key.topic_id)) for s in states
    ]
    archived = sum(1 for s in states if s.archived_records)
    lags = [r["lag_records"] for r in rows if r["lag_records"] is not None]
    lag = f", share lag {sum(lags)} record(s) over {len(lags)}" if bootstrap is not None else ""
    print(
        f"groupwatch analyze: share state: {len(states)} share partition(s), "
        f"{archived} with archived records{lag}",
        file=sys.stderr,
    )
    if to:
        with open(to, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write(findings: Iterable[Finding], out: IO[str], counts: Counter[str]) -> None:
    for f in findings:
        counts[f.severity] += 1
        out.write(json.dumps(f.to_dict(), ensure_ascii=False, separators=(", ", ": ")))
        out.write("\n")


def _look_at_brokers(analyzer: Analyzer, bootstrap: str, counts: Counter[str]) -> None:
    """The brokers' view of the groups the input left with members (``rebalance_stuck``)."""

    def describe(groups: Sequence[str]) -> Mapping[str, tuple[str, tuple[str, ...]]]:
        return broker_client.describe_groups(bootstrap, groups)

    try:
        found = look_twice(analyzer, describe, RECHECK_SECONDS)
    except PartitionsError as exc:
        print(f"groupwatch analyze: {exc}; groups judged from the records only", file=sys.stderr)
        return
    _write(found, sys.stdout, counts)


def run(
    args: argparse.Namespace,
    configured: DetectorConfig | None = None,
    lag_rules: LagRules | None = None,
) -> int:
    """Analyze with the thresholds and configured counts of ``configured`` and the lag rules
    ``lag_rules`` (default: the engine's and the lag core's defaults); a counts file
    (``--partitions``) replaces the configured counts."""
    # Counts read now hold from now on: each generation is judged by the count that held when
    # it was written (groupwatch.detect.topic_counts), whatever a topic has grown to since.
    started = now_ms()
    configured = DetectorConfig() if configured is None else configured
    stated = StatedCounts({}, None)
    broker: dict[str, int] = {}
    names: dict[str, str] = {}
    try:
        if args.partitions:
            stated = load_counts_file(args.partitions, started)
        if args.bootstrap_server:
            broker, names = broker_client.broker_topics(args.bootstrap_server)
    except PartitionsError as exc:
        print(f"groupwatch analyze: {exc}", file=sys.stderr)
        return 2
    if args.partitions:
        configured = replace(
            configured, partitions_per_topic=stated.counts, partitions_as_of_ms=stated.as_of_ms
        )
    config = replace(
        configured,
        broker_partitions=broker,
        broker_partitions_as_of_ms=started if args.bootstrap_server else None,
        topic_names=names,
    )
    source = str(args.input)
    try:
        stream: IO[str] = (
            sys.stdin if source == "-" else open(source, encoding="utf-8", errors="replace")
        )
    except OSError as exc:
        print(f"groupwatch analyze: cannot read {source}: {exc.strerror}", file=sys.stderr)
        return 2
    analyzer = Analyzer(config)
    lag = None
    if args.bootstrap_server:
        from groupwatch.detect.lag.offline import InputLag

        lag = InputLag()
    try:
        by_severity = analyze_stream(
            stream, sys.stdout, config, analyzer, lag, getattr(args, "topic", None)
        )
    finally:
        if stream is not sys.stdin:
            stream.close()
    _share_states(
        analyzer,
        getattr(args, "share_state", None),
        args.bootstrap_server or None,
        names,
        by_severity,
    )
    if args.bootstrap_server:
        _look_at_brokers(analyzer, str(args.bootstrap_server), by_severity)
    if lag is not None:
        _lag_at_brokers(
            analyzer,
            lag,
            str(args.bootstrap_server),
            names,
            by_severity,
            args.lag,
            LagRules() if lag_rules is None else lag_rules,
        )
    sys.stdout.flush()
    for severity in SEVERITIES:
        print(f"groupwatch analyze: {severity}: {by_severity.get(severity, 0)}", file=sys.stderr)
    # What the input ended too early to confirm or dismiss: said, not raised.
    for group, pending in analyzer.pending():
        f = pending.finding
        print(
            f"groupwatch analyze: awaiting confirmation: {group} generation {f.generation} "
            f"{f.kind}: {f.detail} (raised if the next generation still shows it, or at "
            f"stream time {pending.deadline_ms})",
            file=sys.stderr,
        )
    for group, finding, deadline in analyzer.unconfirmed():
        print(
            f"groupwatch analyze: awaiting confirmation: {group} {finding.kind}: "
            f"{finding.detail} (raised at a quiescent point from stream time {deadline})",
            file=sys.stderr,
        )
    return 0
