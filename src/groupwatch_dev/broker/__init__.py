"""A real single-node Apache Kafka broker (KRaft) on loopback, for development, tests and the demo.

The broker runs from the jars scripts/setup fetched (``.groupwatch/jars/kafka``), keeps its data
under ``.groupwatch/run/<name>/`` and survives the process that started it: ``start`` returns once
the broker answers, ``status`` and ``stop`` find it again through the state file.  Internal topics
get replication factor 1, because there is one broker.

With ``scram_users`` the broker also listens for SASL_SSL clients (SCRAM-SHA-512), the way
production clusters are reached: TLS keys made with the JDK's keytool when its data folder is
made, the users' SCRAM credentials written into the KRaft metadata by the storage format
(``--add-scram``).  The PLAINTEXT listener stays, for the tooling that produces test traffic.

``kafka_version`` picks the release: :data:`DEFAULT_KAFKA_VERSION` (4.3.1, jvm/kafka/pom.xml)
from ``.groupwatch/jars/kafka``, or the newest one, :data:`NEWEST_KAFKA_VERSION` (4.4.0), from
``.groupwatch/jars/kafka-4.4.0`` (fetched by ``scripts/setup --tests``).  A broker of the newest
release is formatted at its newest feature levels (``share.version=2``: KIP-1191's dead-letter
queue for share groups).
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
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from groupwatch import paths
from groupwatch.bootstrap import STATE_FILE, BrokerState, live_state, read_state
from groupwatch.bootstrap import pid_alive as _pid_alive
from groupwatch.bootstrap import port_answers as _port_answers
from groupwatch.errors import GroupwatchError
from groupwatch_dev import SHORT_LIVED_JVM

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_VERSIONS",
    "NEWEST_KAFKA_VERSION",
    "SCRAM_MECHANISM",
    "BrokerError",
    "BrokerState",
    "LocalBroker",
    "SaslSsl",
    "kafka_jars",
]

#: The release of jvm/kafka/pom.xml: the demo's, the job tests' and most tests' broker.
DEFAULT_KAFKA_VERSION = "4.3.1"
#: The newest release the project runs (scripts/setup --tests fetches it beside the default).
NEWEST_KAFKA_VERSION = "4.4.0"
KAFKA_VERSIONS = (DEFAULT_KAFKA_VERSION, NEWEST_KAFKA_VERSION)

#: The SASL mechanism of the SASL_SSL listener (the one docs/job.md's recipe names).
SCRAM_MECHANISM = "SCRAM-SHA-512"
_SASL_FILE = "sasl_ssl.json"
_SASL_LISTENER = "SASL_SSL"


class BrokerError(GroupwatchError, RuntimeError):
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


@dataclass(frozen=True)
class SaslSsl:
    """What a client needs to reach the SASL_SSL listener: its port and the truststore (JKS)
    holding the broker's self-signed certificate."""

    port: int
    truststore: str
    truststore_password: str

    @property
    def bootstrap(self) -> str:
        # The certificate names both, so the client's hostname verification holds for either.
        return f"127.0.0.1:{self.port}"


class LocalBroker:
    """One named local broker; several can run side by side under different names."""

    def __init__(
        self,
        name: str = "broker",
        *,
        home: Path | None = None,
        scram_users: Mapping[str, str] | None = None,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
        jvm_options: Sequence[str] = (),
    ) -> None:
        if kafka_version not in KAFKA_VERSIONS:
            raise BrokerError(
                f"Kafka {kafka_version} is not one of the project's releases {KAFKA_VERSIONS}"
            )
        self.name = name
        self.kafka_version = kafka_version
        # Added to the broker's JVM (a test session's: SHORT_LIVED_JVM).
        self.jvm_options = tuple(jvm_options)
        # user -> password, written into the metadata when the data folder is made.
        self.scram_users = dict(scram_users or {})
        self.dir = (home / "run" / name) if home is not None else paths.run_dir(name)
        self.dir.mkdir(parents=True, exist_ok=True)
        # The layout groupwatch.bootstrap reads to resolve the "local" alias.
        self.state_file = self.dir / STATE_FILE
        self.log_file = self.dir / "broker.log"
        self.data_dir = self.dir / "data"
        self.tls_dir = self.dir / "tls"

    # -- state -------------------------------------------------------------------------------
    def state(self) -> BrokerState | None:
        """The recorded state, or None if no broker of this name was started."""
        return read_state(self.state_file)

    def running(self) -> BrokerState | None:
        """The state of a live broker that answers on its port, else None."""
        return live_state(self.state_file)

    def sasl_ssl(self) -> SaslSsl | None:
        """The SASL_SSL listener of a broker started with ``scram_users``, else None."""
        try:
            return SaslSsl(**json.loads((self.dir / _SASL_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None

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
            (self.dir / _SASL_FILE).unlink(missing_ok=True)
            state = BrokerState(0, _free_port(), _free_port(), _cluster_id())
            if self.scram_users:
                self._make_tls()
            self._write_properties(state)
            self._format(state)
        else:
            state = old
            self._write_properties(state)
        proc = subprocess.Popen(
            [
                _java(),
                *self._jvm_opts(),
                "-cp",
                self._classpath(),
                "kafka.Kafka",
                str(self._props()),
            ],
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
        listeners = [
            f"PLAINTEXT://127.0.0.1:{state.port}",
            f"CONTROLLER://127.0.0.1:{state.controller_port}",
        ]
        advertised = [f"PLAINTEXT://127.0.0.1:{state.port}"]
        protocols = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
        sasl = self.sasl_ssl()
        extra: dict[str, str] = {}
        if sasl is not None:
            listeners.append(f"{_SASL_LISTENER}://127.0.0.1:{sasl.port}")
            advertised.append(f"{_SASL_LISTENER}://127.0.0.1:{sasl.port}")
            protocols.append(f"{_SASL_LISTENER}:{_SASL_LISTENER}")
            extra = self._sasl_properties()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{state.controller_port}",
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocols),
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
            **extra,
        }
        self._props().write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _sasl_properties(self) -> dict[str, str]:
        """The SASL_SSL listener's settings: SCRAM over TLS with the keystore _make_tls made."""
        prefix = f"listener.name.{_SASL_LISTENER.lower()}"
        mechanism = SCRAM_MECHANISM.lower()
        secret = (self.tls_dir / "password").read_text().strip()
        return {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{prefix}.sasl.enabled.mechanisms": SCRAM_MECHANISM,
            # The broker side of SCRAM needs the module only: the credentials live in the
            # KRaft metadata, not in the JAAS line.
            f"{prefix}.{mechanism}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            f"{prefix}.ssl.keystore.location": str(self.tls_dir / "broker.p12"),
            f"{prefix}.ssl.keystore.type": "PKCS12",
            f"{prefix}.ssl.keystore.password": secret,
            f"{prefix}.ssl.key.password": secret,
        }

    def _make_tls(self) -> None:
        """A self-signed key pair for 127.0.0.1 and localhost, and a JKS truststore holding its
        certificate, made with the JDK's keytool (valid for a week: test and demo brokers)."""
        shutil.rmtree(self.tls_dir, ignore_errors=True)
        self.tls_dir.mkdir(parents=True)
        secret = uuid.uuid4().hex
        (self.tls_dir / "password").write_text(secret)
        keystore, cert = self.tls_dir / "broker.p12", self.tls_dir / "broker.pem"
        truststore = self.tls_dir / "truststore.jks"
        common = ["-storepass", secret, "-noprompt"]
        _keytool(
            "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048",
            "-validity", "7", "-dname", "CN=localhost",
            "-ext", "SAN=dns:localhost,ip:127.0.0.1",
            "-keystore", str(keystore), "-storetype", "PKCS12", "-keypass", secret, *common,
        )  # fmt: skip
        _keytool(
            "-exportcert", "-rfc", "-alias", "broker", "-keystore", str(keystore),
            "-file", str(cert), *common,
        )  # fmt: skip
        _keytool(
            "-importcert", "-alias", "broker", "-file", str(cert), "-keystore", str(truststore),
            "-storetype", "JKS", *common,
        )  # fmt: skip
        sasl = SaslSsl(_free_port(), str(truststore), secret)
        (self.dir / _SASL_FILE).write_text(json.dumps(asdict(sasl)))

    def _jvm_opts(self) -> list[str]:
        return [
            "-Xms256m",
            "-Xmx1g",
            "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            f"-Dkafka.logs.dir={self.dir}",
            *self.jvm_options,
        ]

    def _format(self, state: BrokerState) -> None:
        cmd = [
            _java(),
            "-Xmx256m",
            *SHORT_LIVED_JVM,  # a tool that runs for a second
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.yaml'}",
            "-cp",
            self._classpath(),
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            "--cluster-id",
            state.cluster_id,
            "--config",
            str(self._props()),
        ]
        if self.kafka_version != DEFAULT_KAFKA_VERSION:
            # The newest release at its newest levels, so what only it writes is written
            # (share.version=2 needs metadata.version 4.4-IV0; format's default stops short).
            cmd += ["--release-version", "4.4-IV0", "--feature", "share.version=2"]
        for user, password in sorted(self.scram_users.items()):
            # KRaft keeps SCRAM credentials in its metadata; format writes them (KIP-900).
            cmd += ["--add-scram", f"{SCRAM_MECHANISM}=[name={user},password={password}]"]
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

    def _classpath(self) -> str:
        jars = kafka_jars(self.kafka_version)
        if not any(jars.glob(f"kafka_2.13-{self.kafka_version}.jar")):
            newer = self.kafka_version != DEFAULT_KAFKA_VERSION
            setup = "scripts/setup --tests" if newer else "scripts/setup"
            raise BrokerError(f"no Kafka {self.kafka_version} jars in {jars}; run {setup}")
        return f"{jars}/*"

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


def _keytool(*args: str) -> None:
    exe = shutil.which("keytool")
    if exe is None:
        raise BrokerError("keytool (from the JDK) is not on PATH; it makes the SASL_SSL keys")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode != 0:
        raise BrokerError(f"keytool {args[0]} failed:\n{proc.stdout}{proc.stderr}")


def kafka_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """The folder of one release's jars (broker, clients, the oracle harness built against it)."""
    if version == DEFAULT_KAFKA_VERSION:
        return paths.jars_dir("kafka")
    return paths.jars_dir(f"kafka-{version}")
