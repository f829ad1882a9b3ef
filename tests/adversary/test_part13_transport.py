"""The binds' own HTTP/1.1 client (scheduler.kube.transport after d26f5f4) against answers a
real server may give: both Content-Length and chunked, HEAD and 204, a 103 before the answer, a
reason phrase in UTF-8, headers past the limit, an IPv6 host, a proxy in the configuration,
a server that answers slowly."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time

import pytest
from kubernetes import client

from scheduler.kube.client import Conflict, KubeClusterClient
from scheduler.kube.config import api_client_from_kubeconfig
from scheduler.kube.transport import MAX_HEADER_BYTES, DirectRest
from tests.builders import body, node
from tests.scheduler.kube.test_transport import (
    Authority,
    Front,
    Scripted,
    _direct,
    kubeconfig,
    make_pods,
    node_of,
    serving_context,
)

POD = {"metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}


def test_content_length_and_chunked_together_the_chunks_frame_the_body_and_the_next_answer():
    """RFC 9112 6.3: Transfer-Encoding overrides Content-Length; reading Content-Length bytes
    instead would leave the rest of the body to be taken for the next answer."""
    server = Scripted([
        b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    ])  # fmt: skip
    direct = _direct(server.url)
    first = direct.request("POST", server.url + "/x", {}, b"{}")
    second = direct.request("POST", server.url + "/x", {}, b"{}")
    assert (first.data, second.data) == (b"hello", b"ok")
    assert direct.connections_opened == 1
    direct.close()


def test_head_and_204_read_no_body_and_keep_the_connection():
    server = Scripted([
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
    ])  # fmt: skip
    direct = _direct(server.url)
    # (a body, so the scripted server, which frames requests by Content-Length, reads it)
    assert direct.request("HEAD", server.url + "/x", {}, b"x").status == 200
    assert direct.request("POST", server.url + "/x", {}, b"{}").status == 204
    third = direct.request("POST", server.url + "/x", {}, b"{}")
    assert (third.status, third.data, third.getheader("link")) == (201, b"{}", None)
    assert direct.connections_opened == 1
    direct.close()


def test_a_reason_phrase_in_utf8_is_read_and_the_bind_says_conflict():
    message = b'{"kind":"Status","code":409,"message":"d\xc3\xa9j\xc3\xa0 li\xc3\xa9"}'
    server = Scripted([
        b"HTTP/1.1 409 D\xc3\xa9j\xc3\xa0 li\xc3\xa9\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(message), message),
    ])  # fmt: skip
    cluster = KubeClusterClient(client.ApiClient(client.Configuration(host=server.url)))
    assert cluster.direct is not None
    with pytest.raises(Conflict) as caught:
        cluster.bind(POD, "n1")
    assert caught.value.status == 409
    assert "déjà lié" in str(caught.value)
    cluster.close()


class Tolerant:
    """Answers each request (on any connection, each in a thread of its own) with the next
    scripted bytes; a client that goes away mid-answer does not stop the server."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = list(answers)
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.listener.accept()
                threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            while True:
                data = b""
                while b"\r\n\r\n" not in data:
                    more = connection.recv(65536)
                    if not more:
                        return
                    data += more
                with self.lock:
                    answer = self.answers.pop(0)
                connection.sendall(answer)


def test_headers_past_the_limit_raise_at_once_and_the_next_bind_opens_a_new_connection():
    """(Headers a little past the limit that arrive whole in two reads are taken: the limit
    bounds what is buffered while the end of the headers is awaited.)"""
    huge = b"X-Filler: " + b"a" * (16 * MAX_HEADER_BYTES) + b"\r\n"
    server = Tolerant([
        b"HTTP/1.1 201 Created\r\n" + huge + b"Content-Length: 0\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    ])  # fmt: skip
    direct = _direct(server.url)
    started = time.monotonic()
    with pytest.raises(http.client.HTTPException, match="too long"):
        direct.request("POST", server.url + "/x", {}, b"{}")
    assert time.monotonic() - started < 5
    assert direct.request("POST", server.url + "/x", {}, b"{}").status == 201
    assert direct.connections_opened == 2


def test_an_ipv6_host_is_reached_and_named_in_brackets():
    listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    port = listener.getsockname()[1]
    seen: list[bytes] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            seen.append(data)
            connection.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    cluster = KubeClusterClient(client.ApiClient(client.Configuration(host=f"http://[::1]:{port}")))
    assert cluster.direct is not None
    cluster.bind(POD, "n1")
    thread.join(5)
    listener.close()
    assert seen and f"\r\nHost: [::1]:{port}\r\n".encode() in seen[0]
    assert seen[0].startswith(b"POST /api/v1/namespaces/default/pods/p/binding HTTP/1.1\r\n")
    cluster.close()


def test_a_proxy_in_the_configuration_keeps_binds_on_the_rest_layer_through_the_proxy():
    """A kubeconfig's proxy-url: binds go through it (the REST layer's ProxyManager), never
    straight to the server."""
    proxy = Scripted([b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"])
    configuration = client.Configuration(host="http://apiserver.invalid:6443")
    configuration.proxy = proxy.url
    cluster = KubeClusterClient(client.ApiClient(configuration))
    assert cluster.direct is None
    cluster.bind(POD, "n1")
    assert proxy.requests[0].startswith(
        b"POST http://apiserver.invalid:6443/api/v1/namespaces/default/pods/p/binding HTTP/1.1"
    )


def test_a_server_that_closes_after_each_answer_without_saying_so_costs_no_bind():
    """Some fronts close a kept-alive connection right after an answer without
    ``Connection: close``: the next bind must notice before it writes, and land."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    served = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while len(served) < 5:
                connection, _ = listener.accept()
                with connection:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        more = connection.recv(65536)
                        if not more:
                            break
                        data += more
                    if not data:
                        continue
                    served.append(data)
                    connection.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                    connection.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=serve, daemon=True).start()
    direct = DirectRest(client.Configuration(host=f"http://127.0.0.1:{port}"))
    for _ in range(5):
        time.sleep(0.05)  # the close has arrived
        assert direct.request("POST", f"http://127.0.0.1:{port}/x", {}, b"{}").status == 201
    assert direct.connections_opened == 5
    listener.close()


def test_a_tls_connection_the_server_closed_while_idle_is_not_reused(sim, tmp_path):
    """Over TLS the close arrives as a close_notify record (and the FIN): the idle check must
    see it there too, and the next bind open a new connection rather than fail."""
    authority = Authority("kubernetes")
    sim.core.create_node(body(node("n1", ready=True)))
    front = Front(sim.server.url, serving_context(authority, tmp_path, ["127.0.0.1"]))
    try:
        path = kubeconfig(tmp_path, f"https://127.0.0.1:{front.port}", authority,
                          authority.issue("system:kube-scheduler"), "s3cret")  # fmt: skip
        cluster = KubeClusterClient(api_client_from_kubeconfig(path))
        make_pods(sim, "a", "b")
        cluster.bind(cluster.get_pod("default", "a"), "n1")
        front.drop_connections()
        time.sleep(0.1)
        cluster.bind(cluster.get_pod("default", "b"), "n1")
        assert [node_of(sim, n) for n in ("a", "b")] == ["n1", "n1"]
        assert cluster.direct.connections_opened == 2
        cluster.close()
    finally:
        front.stop()
