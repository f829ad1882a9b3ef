"""The scheduler's hot write path (Bindings) over plain ``http.client`` keep-alive connections,
one per writing thread.

A bind sent through the kubernetes client's REST layer (urllib3's pool manager, connection
pool, retry and response objects) costs about 0.25 ms of CPU in the scheduler's process, most
of it urllib3's bookkeeping; 10,000 binds are 2.5 s of an interpreter that also runs the
informers. ``http.client`` on a connection the thread keeps costs a third of that.

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

import http.client
import select
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

from kubernetes.client.rest import RESTClientObject, should_bypass_proxies

DEFAULT_TIMEOUT = 60.0  # kube-apiserver's default --request-timeout (1m0s)


class Response:
    """What a write needs of an answer: its status, reason, headers and whole body."""

    __slots__ = ("data", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: http.client.HTTPMessage, data: bytes):
        self.status, self.reason, self.headers, self.data = status, reason, headers, data

    def read(self) -> bytes:
        return self.data

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)


class _TLSConnection(http.client.HTTPSConnection):
    """An HTTPS connection whose TLS server name (SNI and the name checked) may differ from the
    host it connects to: kubeconfig's ``tls-server-name``."""

    def __init__(self, host: str, port: int, *, timeout: float, context: ssl.SSLContext,
                 server_hostname: str) -> None:  # fmt: skip
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_hostname = server_hostname

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP (and TCP_NODELAY), then TLS
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=self._server_hostname
        )


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
        self._open: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self.connections_opened = 0

    def _connection(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None and _dropped(connection):
            self._discard(connection)
            connection = None
        if connection is None:
            if self._https:
                if self._context is None:
                    self._context = tls_context(self._configuration)
                connection = _TLSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._context,
                    server_hostname=self._server_hostname,
                )  # fmt: skip
            else:
                connection = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
            self._local.connection = connection
            with self._lock:
                self._open.add(connection)
                self.connections_opened += 1
        return connection

    def _discard(self, connection: http.client.HTTPConnection) -> None:
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
        connection = self._connection()
        try:
            connection.request(method, target, body, headers or {})
            answer = connection.getresponse()
            data = answer.read()
        except BaseException:
            self._discard(connection)  # its state is unknown: the next request opens another
            raise
        if answer.will_close:
            self._discard(connection)
        return Response(answer.status, answer.reason, answer.headers, data)

    def close(self) -> None:
        with self._lock:
            connections, self._open = list(self._open), weakref.WeakSet()
        for connection in connections:
            connection.close()


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """The idle connection was closed by the server (or has unexpected bytes): urllib3's
    ``is_connection_dropped``, a zero-timeout poll for readability."""
    sock: socket.socket | None = connection.sock
    if sock is None:
        return False  # not connected yet: http.client connects on the request
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
