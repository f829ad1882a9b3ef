"""A threaded HTTP server speaking the Kubernetes REST API over a ``Cluster``.

Binds loopback only. ``ApiServer(cluster, port=0).start()`` picks a free port; ``stop()`` ends
watch streams, closes open connections and joins every handler thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import yaml

from scheduler.api.labels import CLOCK_EXTENSION
from simcluster.api.audit import RequestAttributes, request_attributes
from simcluster.api.cluster import Cluster
from simcluster.api.errors import ApiError, bad_request, status_object
from simcluster.api.requests import RequestContext, dispatch

if TYPE_CHECKING:
    from simcluster.faults import Faults

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 8 * 1024 * 1024
STREAM_CHUNK = 64 * 1024  # bytes of watch events written as one chunk at most


class ApiServer:
    """The simulated cluster's API server; also usable as a context manager."""

    def __init__(self, cluster: Cluster, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the simulated API server binds loopback only, not {host!r}")
        self.cluster = cluster
        self.faults: Faults | None = None  # seeded faults (simcluster.faults), off by default
        # Called with each request's RBAC attributes before it is served (simcluster.api.audit).
        self.recorder: Callable[[RequestAttributes], None] | None = None
        # GET /metrics: Prometheus text (simcluster.metrics), when set; else a 404 as any path.
        self.metrics: Callable[[], bytes] | None = None
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, port), _handler_class(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ApiServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="sim-apiserver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:  # shutdown() waits for serve_forever, which may never run
            self._httpd.shutdown()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()  # joins the handler threads
        if self._thread:
            self._thread.join()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(
        self, path: str | Path, *, context: str = "sluice-sim", clock: dict | None = None
    ) -> Path:
        """A kubeconfig pointing at this server (plain HTTP, no credentials needed).

        ``clock`` (``WallClock.describe()``, read back by ``scheduler.kube.config``) tells the scheduler how fast simulated
        time runs, so both share the speed-up.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        config = kubeconfig(self.url, context)
        if clock is not None:
            config["clusters"][0]["cluster"]["extensions"] = [
                {"name": CLOCK_EXTENSION, "extension": clock}
            ]
        # Written whole or not at all (a temporary file renamed over it): whoever polls for the
        # file (kubectl, the scheduler, a test) never reads half of it.
        # A symlinked kubeconfig stays a link: its target is the file replaced.
        target = path.resolve() if path.is_symlink() else path
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        partial.write_text(yaml.safe_dump(config, sort_keys=False))
        os.replace(partial, target)
        return path

    def track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            (self._connections.add if open_ else self._connections.discard)(connection)


def kubeconfig(server_url: str, context: str = "sluice-sim") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "preferences": {},
    }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True
    # socketserver's listen backlog is 5: clients opening many connections at once (a
    # scheduler's bind workers) were reset. kube-apiserver listens with the system's maximum.
    request_queue_size = 1024

    def handle_error(self, request: object, client_address: tuple) -> None:
        """A client that hangs up (a watcher stopping) is normal; anything else is logged."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        log.exception("error serving a request from %s", client_address[0])


def _handler_class(server: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        api = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sluice-sim-apiserver"
    api: ApiServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, delayed ACKs add 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.api.track(self.connection, True)

    def finish(self) -> None:
        self.api.track(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        try:
            body = self._read_body()
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if self.api.recorder is not None:
                self.api.recorder(request_attributes(method, url.path, query))
            if method == "GET" and url.path == "/metrics" and self.api.metrics is not None:
                self._send_text(200, self.api.metrics())
                return
            context = RequestContext(
                method=method,
                path=url.path,
                query=query,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                server_url=self.api.url,
                stopping=self.api.stopping,
            )
            code, payload = dispatch(self.api.cluster, context, self.api.faults)
        except ApiError as error:
            code, payload = error.code, error.status()
        except Exception as error:  # a bug must not take the server down
            log.exception("handler failed for %s %s", method, self.path)
            message = (
                f"Internal error occurred: {method} {self.path}: {type(error).__name__}: {error}"
            )
            code, payload = 500, status_object(500, message, "InternalError")
        if isinstance(payload, dict) or payload is None:
            self._send_json(code, payload)
        else:
            self._send_stream(code, payload)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise bad_request(f"request body of {length} bytes is larger than {MAX_BODY_BYTES}")
        return self.rfile.read(length) if length else b""

    def _send_json(self, code: int, payload: dict | None) -> None:
        data = json.dumps(payload if payload is not None else {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, code: int, events: object) -> None:
        """Chunked newline-delimited JSON. Events are written out when the watcher has caught
        up (``watch.CAUGHT_UP``), all that were waiting in one chunk, as kube-apiserver
        flushes its watch stream only when no further event is waiting; a chunk is also
        written once it holds ``STREAM_CHUNK`` bytes."""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            lines: list[bytes] = []
            size = 0
            for event in events:  # type: ignore[attr-defined]
                if event is not None:
                    line = json.dumps(event).encode() + b"\n"
                    lines.append(line)
                    size += len(line)
                if lines and (event is None or size >= STREAM_CHUNK):
                    data = b"".join(lines)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    lines, size = [], 0
            if lines:
                data = b"".join(lines)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away
        except Exception:
            log.exception("watch stream failed for %s", self.path)
            self.close_connection = True
        finally:
            events.close()  # type: ignore[attr-defined]
