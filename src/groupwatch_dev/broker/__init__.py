"""A real single-node Apache Kafka broker (KRaft) on loopback, for development, tests and the demo.

The broker runs from the jars scripts/setup fetched (``.groupwatch/jars/kafka``), keeps its data
under ``.groupwatch/run/<name>/`` and survives the process that started it: ``start`` returns once
the broker answers, ``status`` and ``stop`` find it again through the state file.  Internal topics
get replication factor 1, because there is one broker.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from groupwatch import paths
from groupwatch.bootstrap import STATE_FILE, BrokerState, live_state, read_state
from groupwatch.bootstrap import pid_alive as _pid_alive
from groupwatch.bootstrap import port_answers as _port_answers

__all__ = ["BrokerError", "BrokerState", "LocalBroker"]


class BrokerError(RuntimeError):
    """The local broker could not be started, reached or stopped; the message says why."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


_LOG4J2 = """\
Configuration:
  name: groupwatch-broker
  Appenders:
    File:
      name: FILE
      fileName: "{log}"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: FILE
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.raft
        level: WARN
      - name: kafka.log.LogCleaner
        level: WARN
"""


class LocalBroker:
    """One named local broker; several can run side by side under different names."""

    def __init__(self, name: str = "broker", *, home: Path | None = None) -> None:
        self.name = name
        self.dir = (home / "run" / name) if home is not None else paths.run_dir(name)
        self.dir.mkdir(parents=True, exist_ok=True)
        # The layout groupwatch.bootstrap reads to resolve the "local" alias.
        self.state_file = self.dir / STATE_FILE
        self.log_file = self.dir / "broker.log"
        self.data_dir = self.dir / "data"

    # -- state -------------------------------------------------------------------------------
    def state(self) -> BrokerState | None:
        """The recorded state, or None if no broker of this name was started."""
        return read_state(self.state_file)

    def running(self) -> BrokerState | None:
        """The state of a live broker that answers on its port, else None."""
        return live_state(self.state_file)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, *, timeout: float = 90.0, fresh: bool = False) -> BrokerState:
        """Start the broker (or return the one already running) and wait until it serves."""
        live = self.running()
        if live and not fresh:
            return live
        if live:
            self.stop()
        old = self.state()
        if fresh or old is None or not (self.data_dir / "meta.properties").exists():
            # The KRaft quorum records its controller endpoint in the data, so a broker keeps
            # its ports for life; a new data folder is the moment to pick new ones.
            shutil.rmtree(self.data_dir, ignore_errors=True)
            state = BrokerState(0, _free_port(), _free_port(), _cluster_id())
            self._write_properties(state)
            self._format(state)
        else:
            state = old
            self._write_properties(state)
        proc = subprocess.Popen(
            [_java(), *self._jvm_opts(), "-cp", _classpath(), "kafka.Kafka", str(self._props())],
            stdout=open(self.dir / "stdout.log", "ab"),  # noqa: SIM115 - owned by the child
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives the shell that started it; stopped by stop()
            cwd=self.dir,
        )
        state = BrokerState(proc.pid, state.port, state.controller_port, state.cluster_id)
        self.state_file.write_text(json.dumps(asdict(state)))
        self._wait_ready(state, proc, timeout)
        return state

    def stop(self, *, timeout: float = 60.0) -> bool:
        """Stop the broker cleanly (SIGTERM, then SIGKILL after ``timeout``); False if none ran."""
        state = self.state()
        if state is None or not _pid_alive(state.pid):
            return False
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _pid_alive(state.pid):
                return True
            time.sleep(0.2)
        os.kill(state.pid, signal.SIGKILL)
        return True

    # -- internals -----------------------------------------------------------------------------
    def _props(self) -> Path:
        return self.dir / "server.properties"

    def _write_properties(self, state: BrokerState) -> None:
        (self.dir / "log4j2.yaml").write_text(_LOG4J2.format(log=self.log_file))
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{state.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{state.port},CONTROLLER://127.0.0.1:{state.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{state.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            # One broker: every internal topic must make do with one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Tests and the demo form groups by the dozen: don't wait 3 s before each first join.
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # Replayed incidents carry their own (old) event times; time-based retention would
            # roll and delete them minutes after they are produced. A local broker keeps all.
            "log.retention.ms": "-1",
        }
        self._props().write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _jvm_opts(self) -> list[str]:
        return [
            "-Xms256m",
            "-Xmx1g",
            "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            f"-Dkafka.logs.dir={self.dir}",
        ]

    def _format(self, state: BrokerState) -> None:
        cmd = [
            _java(),
            "-Xmx256m",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            "-cp",
            _classpath(),
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            "--cluster-id",
            state.cluster_id,
            "--config",
            str(self._props()),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        if proc.returncode != 0:
            raise BrokerError(f"formatting the broker storage failed:\n{proc.stdout}{proc.stderr}")

    def _wait_ready(
        self, state: BrokerState, proc: subprocess.Popen[bytes], timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BrokerError(
                    f"the broker exited with {proc.returncode} while starting; "
                    f"see {self.log_file} and {self.dir / 'stdout.log'}:\n{self._tail()}"
                )
            if _port_answers(state.port) and _metadata_answers(state.bootstrap):
                return
            time.sleep(0.5)
        self.stop(timeout=10)
        raise BrokerError(f"the broker did not answer within {timeout:.0f}s:\n{self._tail()}")

    def _tail(self, lines: int = 30) -> str:
        out = []
        for f in (self.dir / "stdout.log", self.log_file):
            try:
                out.extend(f.read_text(errors="replace").splitlines()[-lines:])
            except OSError:
                pass
        return "\n".join(out)


def _metadata_answers(bootstrap: str) -> bool:
    """A broker that accepts TCP may still be starting; a metadata round trip proves it serves."""
    from kafka import KafkaAdminClient  # kafka-python: only needed here
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
    except (KafkaError, OSError, ValueError):
        return False
    try:
        admin.list_topics()
        return True
    except (KafkaError, OSError, ValueError):
        return False
    finally:
        admin.close()


def _cluster_id() -> str:
    # KRaft wants a base64 UUID of 22 characters, as `kafka-storage random-uuid` prints.
    # One in 64 starts with "-", which kafka-storage's argument parser takes for an option
    # (Kafka's own generator avoids it the same way).
    import base64

    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _java() -> str:
    exe = shutil.which("java")
    if exe is None:
        raise BrokerError("java is not on PATH; run scripts/setup")
    return exe


def _classpath() -> str:
    jars = paths.jars_dir("kafka")
    if not any(jars.glob("kafka_2.13-*.jar")):
        raise BrokerError(f"no Kafka jars in {jars}; run scripts/setup")
    return f"{jars}/*"
