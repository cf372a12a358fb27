"""A real S3-compatible server on loopback for the tests: S3Proxy (Maven Central, fetched by
scripts/setup into .groupwatch/jars/s3proxy) over a temporary folder, with SigV4 auth.

S3Proxy 4 is the one used: 2.6.0 answers a ``PUT`` with ``If-None-Match: *`` on an existing
key with 200 and overwrites it, so the conditional commits delta-rs makes on S3 would not be
exercised at all (tests/s3/test_s3_server.py holds the server to the 412)."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from groupwatch import paths

ACCESS_KEY = "groupwatch-test"
SECRET_KEY = "groupwatch-test-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class S3Server:
    """A running S3Proxy: its endpoint, and the keys it takes."""

    endpoint: str
    process: subprocess.Popen[bytes]
    data: Path

    def env(self, secret: str = SECRET_KEY) -> dict[str, str]:
        """What a process is given to reach it: the AWS chain's environment variables."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_REGION": REGION,
        }

    def overrides(self, root: str) -> list[str]:
        """``--set`` items putting the tables and checkpoints under ``root`` (``s3a://b/x``)."""
        return [
            f"storage.endpoint={self.endpoint}",
            f"delta.root={root}/delta",
            f"checkpoint.root={root}/checkpoints",
        ]

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        secret: str = SECRET_KEY,
    ) -> int:
        """One signed (SigV4) request, its HTTP status: buckets made, conditional puts tried."""
        now = datetime.datetime.now(datetime.UTC)
        amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        signed = {
            "host": self.endpoint.split("://", 1)[1],
            # Not urllib's form type: the server would read the body as a form.
            "content-type": "application/octet-stream",
            "x-amz-date": amz,
            "x-amz-content-sha256": payload,
            **{k.lower(): v for k, v in (headers or {}).items()},
        }
        names = ";".join(sorted(signed))
        canonical = "\n".join(
            [method, path, "", *(f"{k}:{signed[k]}" for k in sorted(signed)), "", names, payload]
        )
        scope = f"{day}/{REGION}/s3/aws4_request"
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope, digest])
        key = ("AWS4" + secret).encode()
        for part in (day, REGION, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        signed["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, "
            f"SignedHeaders={names}, Signature={signature}"
        )
        req = urllib.request.Request(  # noqa: S310 - loopback, http by construction
            self.endpoint + path,
            data=body if method == "PUT" else None,
            method=method,
            headers=signed,
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310
                status: int = resp.status
                return status
        except urllib.error.HTTPError as exc:
            return exc.code

    def make_bucket(self, name: str) -> None:
        status = self.request("PUT", f"/{name}")
        if status not in (200, 409):
            raise RuntimeError(f"S3Proxy did not create bucket {name}: HTTP {status}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(workdir: Path) -> S3Server:
    """S3Proxy on a free loopback port, its objects under ``workdir/data``."""
    jars = paths.jars_dir("s3proxy")
    if not any(jars.glob("s3proxy-*.jar")):
        raise RuntimeError(f"no S3Proxy under {jars}: run scripts/setup")
    port = _free_port()
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    props = workdir / "s3proxy.conf"
    props.write_text(
        "\n".join(
            [
                f"s3proxy.endpoint=http://127.0.0.1:{port}",
                "s3proxy.authorization=aws-v4",
                f"s3proxy.identity={ACCESS_KEY}",
                f"s3proxy.credential={SECRET_KEY}",
                "jclouds.provider=filesystem-nio2",
                f"jclouds.filesystem.basedir={data}",
                f"jclouds.identity={ACCESS_KEY}",
                f"jclouds.credential={SECRET_KEY}",
                "",
            ]
        )
    )
    # Without a configuration logback logs everything at DEBUG: thousands of lines a second
    # of the server's CPU.
    logback = workdir / "logback.xml"
    logback.write_text(
        '<configuration><appender name="out" class="ch.qos.logback.core.ConsoleAppender">'
        "<encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder></appender>"
        '<root level="WARN"><appender-ref ref="out"/></root></configuration>'
    )
    log = (workdir / "s3proxy.log").open("wb")
    process = subprocess.Popen(  # noqa: S603 - our own java and jars
        [
            "java",
            "-Xmx256m",
            f"-Dlogback.configurationFile={logback}",
            "-cp",
            f"{jars}/*",
            "org.gaul.s3proxy.Main",
            "--properties",
            str(props),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = S3Server(f"http://127.0.0.1:{port}", process, data)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"S3Proxy exited ({process.returncode}): see {workdir}/s3proxy.log")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError("S3Proxy did not listen within 60 s")
