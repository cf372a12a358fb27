"""Local HTTP receivers on 127.0.0.1 for webhook tests: one that records, hangs, or fails."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, mode: str = "ok", hang_seconds: float = 30.0) -> None:
        self.mode = mode
        self.hang_seconds = hang_seconds
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self.got = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                outer.attempts += 1
                if outer.mode == "hang":
                    outer.release.wait(outer.hang_seconds)
                    return
                if outer.mode == "fail":
                    self.send_response(503)
                    self.end_headers()
                    return
                outer.bodies.append(json.loads(body))
                outer.got.set()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        import time

        end = time.monotonic() + timeout
        while len(self.bodies) < count and time.monotonic() < end:
            time.sleep(0.05)
        return self.bodies


@contextmanager
def receiver(mode: str = "ok") -> Iterator[Receiver]:
    r = Receiver(mode)
    t = threading.Thread(target=r.server.serve_forever, daemon=True)
    t.start()
    try:
        yield r
    finally:
        r.release.set()
        r.server.shutdown()
        r.server.server_close()
