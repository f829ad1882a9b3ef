"""The scheduler's hot write path (Bindings) over keep-alive connections of its own, one per
writing thread, speaking just the HTTP/1.1 a JSON request and its answer need.

A bind sent through the kubernetes client's REST layer (urllib3's pool manager, connection
pool, retry and response objects) costs about 0.25 ms of CPU in the scheduler's process, most
of it urllib3's bookkeeping; 10,000 binds are 2.5 s of an interpreter that also runs the
informers and the cycle. ``http.client`` on a connection the thread keeps cost a third of that,
half of it its header checks and its ``email`` parser for the answer's headers; the request
written in one piece and the answer read by this module's small parser (status line, headers,
a ``Content-Length`` or chunked body, ``Connection: close``) costs less again.

What the REST layer guarantees is kept, from the same ``Configuration``:

* TLS as urllib3 sets it up from the configuration (kubernetes ``rest.RESTClientObject``):
  the server's certificate verified against ``ssl_ca_cert`` / ``ca_cert_data`` (else the
  system's roots) unless ``verify_ssl`` is off, its name checked unless ``assert_hostname`` is
  False, ``tls_server_name`` as SNI and the name checked, the client certificate
  ``cert_file`` / ``key_file`` presented;
* the headers (auth, User-Agent) are the caller's, as before;
* a connection the server closed while idle is not reused (urllib3's
  ``is_connection_dropped``); a request that fails is not sent again (urllib3 does not retry
  a POST that failed once sent), and its connection is closed.

A configuration this path does not cover — a proxy, an ``assert_hostname`` naming another
host, custom socket options — gets ``None`` from :func:`direct_rest`: the caller keeps the
REST layer.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
import time
import weakref
from typing import Any
from urllib.parse import urlsplit

from kubernetes.client.rest import RESTClientObject, should_bypass_proxies

DEFAULT_TIMEOUT = 60.0  # kube-apiserver's default --request-timeout (1m0s)


class Response:
    """What a write needs of an answer: its status, reason, headers (names in lower case) and
    whole body."""

    __slots__ = ("data", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], data: bytes):
        self.status, self.reason, self.headers, self.data = status, reason, headers, data

    def read(self) -> bytes:
        return self.data

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


class ProtocolError(http.client.HTTPException):
    """The server's answer is not the HTTP/1.1 this module reads."""


MAX_HEADER_BYTES = 64 * 1024  # an answer's status line and headers, at most (http.client: 64 KiB)


class _Connection:
    """One keep-alive connection: a socket (TLS-wrapped for https) and what was read past the
    last answer."""

    __slots__ = ("__weakref__", "buffer", "deadline", "sock", "timeout")

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.buffer = b""
        self.timeout = timeout
        self.deadline = 0.0  # the current exchange's end (time.monotonic)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _more(self) -> None:
        # The timeout bounds the whole exchange, as kube-apiserver's --request-timeout bounds a
        # request: a server trickling its answer a byte at a time does not hold a bind longer.
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole answer within {self.timeout:g} s")
        self.sock.settimeout(left)
        data = self.sock.recv(65536)
        if not data:
            raise http.client.RemoteDisconnected("the server closed the connection")
        self.buffer += data

    def _line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise ProtocolError("a line of the answer is too long")
            self._more()
        line, self.buffer = self.buffer[:end], self.buffer[end + 2 :]
        return line

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._more()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def exchange(self, request: bytes, method: str) -> tuple[Response, bool]:
        """Send ``request`` whole; read its answer. Also says whether the connection must be
        closed after it (``Connection: close``, HTTP/1.0, a body read to the end)."""
        self.deadline = time.monotonic() + self.timeout
        self.sock.settimeout(self.timeout)
        self.sock.sendall(request)
        while True:
            while (end := self.buffer.find(b"\r\n\r\n")) < 0:
                if len(self.buffer) > MAX_HEADER_BYTES:
                    raise ProtocolError("the answer's headers are too long")
                self._more()
            if end > MAX_HEADER_BYTES:  # the end arrived with the read that crossed the limit
                raise ProtocolError("the answer's headers are too long")
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            status_line, *lines = head.decode("iso-8859-1").split("\r\n")
            version, _, rest = status_line.partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or not code.isdigit() or len(code) != 3:
                raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
            status = int(code)
            if not 100 <= status < 200 or status == 101:
                break  # an interim 1xx answer comes before the real one
        headers: dict[str, str] = {}
        for line in lines:
            name, colon, value = line.partition(":")
            if not colon:
                raise ProtocolError(f"not a header line: {line[:80]!r}")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
        close = "close" in tokens or (version == "HTTP/1.0" and "keep-alive" not in tokens)
        if method == "HEAD" or status in (204, 304):
            data = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            data = self._chunked()
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit():
                raise ProtocolError(f"Content-Length: {length[:40]!r}")
            data = self._exactly(int(length))
        else:  # the body ends when the server closes the connection
            try:
                while True:
                    self._more()
            except http.client.RemoteDisconnected:
                pass
            data, self.buffer, close = self.buffer, b"", True
        return Response(status, reason, headers, data), close

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"chunk size {size_text[:20]!r}") from None
            if size == 0:
                while self._line():  # trailers, up to the empty line
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            if self._exactly(2) != b"\r\n":
                raise ProtocolError("a chunk does not end with CRLF")


def tls_context(configuration: Any) -> ssl.SSLContext:
    """The client's TLS settings as the kubernetes client hands them to urllib3."""
    if configuration.verify_ssl:
        context = ssl.create_default_context(
            cafile=configuration.ssl_ca_cert, cadata=configuration.ca_cert_data
        )
        if configuration.assert_hostname is False:
            context.check_hostname = False  # the chain is still verified
    else:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context


def direct_rest(api: Any, *, timeout: float = DEFAULT_TIMEOUT) -> DirectRest | None:
    """A :class:`DirectRest` for the ApiClient ``api``'s configuration, or None when it needs
    what only the REST layer does (a proxy, custom socket options, a host name asserted other
    than the host's), or when its REST client was replaced (a fence, a recorder: whatever
    wraps it must see every request)."""
    if type(api.rest_client) is not RESTClientObject:
        return None
    configuration = api.configuration
    parts = urlsplit(configuration.host or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if configuration.proxy and not should_bypass_proxies(
        configuration.host, configuration.no_proxy or ""
    ):
        return None
    if configuration.socket_options is not None or getattr(configuration, "keep_alive", False):
        return None
    if configuration.assert_hostname not in (None, True, False):
        return None
    return DirectRest(configuration, timeout=timeout)


class DirectRest:
    """``request(method, url, headers=, body=)`` as the kubernetes client's REST client has it,
    over one keep-alive connection per calling thread."""

    def __init__(self, configuration: Any, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.base = configuration.host
        parts = urlsplit(self.base)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")  # a server behind a path (a proxy's /k8s/...)
        self._timeout = timeout
        self._configuration = configuration
        self._context: ssl.SSLContext | None = None  # made on the first connection (CA files read)
        self._server_hostname = configuration.tls_server_name or self._host
        self._local = threading.local()
        self._lock = threading.Lock()
        # Open connections, for close(); a thread that ended takes its connection with it.
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self.connections_opened = 0
        default_port = 443 if self._https else 80
        self._host_header = (
            self._host if self._port == default_port else f"{self._host}:{self._port}"
        )
        if ":" in self._host:  # an IPv6 literal
            self._host_header = f"[{self._host}]" + (
                "" if self._port == default_port else f":{self._port}"
            )

    def _connect(self) -> _Connection:
        sock = socket.create_connection((self._host, self._port), timeout=self._timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client does
            if self._https:
                if self._context is None:
                    self._context = tls_context(self._configuration)
                sock = self._context.wrap_socket(sock, server_hostname=self._server_hostname)
        except BaseException:
            sock.close()
            raise
        return _Connection(sock, self._timeout)

    def _connection(self) -> _Connection:
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is not None and _dropped(connection.sock, connection.buffer):
            self._discard(connection)
            connection = None
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
            with self._lock:
                self._open.add(connection)
                self.connections_opened += 1
        return connection

    def _discard(self, connection: _Connection) -> None:
        connection.close()
        self._local.connection = None
        with self._lock:
            self._open.discard(connection)

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: bytes | str | None = None,
        **_: Any,
    ) -> Response:
        if not url.startswith(self.base):
            raise ValueError(f"{url}: not on {self.base}")
        target = self._prefix + url[len(self.base) :]
        data = body.encode() if isinstance(body, str) else (body or b"")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}",
                 "Accept-Encoding: identity"]  # fmt: skip
        for name, value in (headers or {}).items():
            text = f"{name}{value}"
            if "\r" in text or "\n" in text:  # no header may smuggle in another line
                raise ValueError(f"header {name!r}: a line break in a header")
            lines.append(f"{name}: {value}")
        if data or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(data)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data
        connection = self._connection()
        try:
            response, close = connection.exchange(request, method)
        except BaseException:
            self._discard(connection)  # its state is unknown: the next request opens another
            raise
        if close:
            self._discard(connection)
        return response

    def close(self) -> None:
        with self._lock:
            connections, self._open = list(self._open), weakref.WeakSet()
        for connection in connections:
            connection.close()


def _dropped(sock: socket.socket, unread: bytes) -> bool:
    """The idle connection was closed by the server (or has unexpected bytes): urllib3's
    ``is_connection_dropped``, a zero-timeout poll for readability."""
    if unread:
        return True  # bytes no request asked for: nothing after them can be trusted
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
