"""Binds over the scheduler's own keep-alive connections (scheduler.kube.transport) keep what
the kubernetes client's REST layer guaranteed: TLS verified against the kubeconfig's CA, the
client certificate and the bearer token presented, the leader fence asked before each write,
errors per pod (409, 429, 500) and Retry-After as client-go honours it, the QPS limiter, and a
connection the server closed while idle is not reused.

The simulated API server speaks plain HTTP; here it stands behind a front (``Front``) that
terminates TLS as kube-apiserver does (requiring a client certificate signed by the cluster's
CA), records what each request presented, forwards it to the simulated server, and can answer
a request itself (a 429 from API Priority and Fairness, a 500) before it gets there."""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.client
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client

from scheduler.kube.client import RETRY_AFTER_TRIES, ApiError, Conflict, KubeClusterClient
from scheduler.kube.config import api_client_from_kubeconfig
from scheduler.kube.fencing import NotLeader, fence_cluster_client
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.transport import DirectRest, direct_rest
from tests.builders import body, node, pod

# -- certificates ----------------------------------------------------------------------------


@dataclass
class Authority:
    name: str
    key: ec.EllipticCurvePrivateKey = field(init=False)
    certificate: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        self.certificate = (
            _builder(subject, subject, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(
        self, common_name: str, *, server_names: list[str] | None = None
    ) -> tuple[bytes, bytes]:
        """A leaf (PEM certificate, PEM key): for a server with ``server_names`` (DNS names, or
        IP addresses), else for a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        builder = _builder(subject, self.certificate.subject, key.public_key())
        builder = builder.add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        ).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
            critical=False,
        )
        if server_names is not None:
            names: list[x509.GeneralName] = []
            for n in server_names:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(n)))
                except ValueError:
                    names.append(x509.DNSName(n))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
            usage = ExtendedKeyUsageOID.SERVER_AUTH
        else:
            usage = ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        return (
            certificate.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )


def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:  # noqa: ANN001
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


# -- the front -------------------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None
    client_name: str | None  # the client certificate's common name, when one was presented


class Front:
    """An HTTP/1.1 server (TLS when given a context) in front of the simulated API server."""

    def __init__(self, upstream: str, tls: ssl.SSLContext | None = None) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.seen: list[Seen] = []
        # pod name -> answers given instead of forwarding, first first: (status, headers)
        self.answers: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.accepted: list[socket.socket] = []
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                front.accepted.append(self.connection)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = self.rfile.read(length) if length else None
                name = None
                if isinstance(self.connection, ssl.SSLSocket):
                    peer = self.connection.getpeercert() or {}
                    for rdn in peer.get("subject", ()):
                        for key, value in rdn:
                            if key == "commonName":
                                name = value
                front.seen.append(
                    Seen(self.command, self.path, self.headers.get("Authorization"), name)
                )
                pod_name = self.path.split("/pods/")[-1].split("/")[0]
                queued = front.answers.get(pod_name)
                if queued:
                    status, headers = queued.pop(0)
                    data = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "message": f"injected {status}", "code": status}).encode()  # fmt: skip
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                else:
                    upstream_connection = http.client.HTTPConnection(host, int(port), timeout=10)
                    forwarded = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    upstream_connection.request(self.command, self.path, payload, forwarded)
                    answer = upstream_connection.getresponse()
                    data = answer.read()
                    upstream_connection.close()
                    self.send_response(answer.status)
                    self.send_header("Content-Type", answer.getheader("Content-Type") or "")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _serve  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def drop_connections(self) -> None:
        """Close every connection accepted so far, as a server closes idle keep-alives."""
        for connection in self.accepted:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.accepted.clear()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serving_context(authority: Authority, tmp: Path, names: list[str]) -> ssl.SSLContext:
    """kube-apiserver's TLS: its serving certificate, client certificates required (CA)."""
    certificate, key = authority.issue("kube-apiserver", server_names=names)
    (tmp / "serving.crt").write_bytes(certificate)
    (tmp / "serving.key").write_bytes(key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp / "serving.crt", tmp / "serving.key")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=authority.pem.decode())
    return context


def kubeconfig(tmp: Path, server: str, ca: Authority, client_pair: tuple[bytes, bytes],
               token: str, *, tls_server_name: str | None = None) -> Path:  # fmt: skip
    cluster: dict = {"server": server,
                     "certificate-authority-data": base64.b64encode(ca.pem).decode()}  # fmt: skip
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {
            "client-certificate-data": base64.b64encode(client_pair[0]).decode(),
            "client-key-data": base64.b64encode(client_pair[1]).decode(),
            "token": token,
        }}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }  # fmt: skip
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def cluster_ca() -> Authority:
    return Authority("kubernetes")


@pytest.fixture
def scheduler_identity(cluster_ca: Authority) -> tuple[bytes, bytes]:
    return cluster_ca.issue("system:kube-scheduler")


@pytest.fixture
def tls_front(sim, cluster_ca: Authority, tmp_path: Path) -> Iterator[Front]:
    sim.core.create_node(body(node("n1", ready=True)))
    front = Front(sim.server.url, serving_context(cluster_ca, tmp_path, ["127.0.0.1"]))
    yield front
    front.stop()


@pytest.fixture
def plain_front(sim) -> Iterator[Front]:
    sim.core.create_node(body(node("n1", ready=True)))
    front = Front(sim.server.url)
    yield front
    front.stop()


def make_pods(sim, *names: str) -> None:
    for name in names:
        sim.core.create_namespaced_pod("default", body(pod(name)))


def node_of(sim, name: str) -> str | None:
    return sim.core.read_namespaced_pod(name, "default").spec.node_name


def plain_cluster(front: Front, **kw) -> KubeClusterClient:  # noqa: ANN003
    return KubeClusterClient(
        client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{front.port}")), **kw
    )


# -- TLS and credentials ---------------------------------------------------------------------


def test_binds_present_the_kubeconfigs_client_certificate_and_token_over_verified_tls(
    sim, tls_front, cluster_ca, scheduler_identity, tmp_path
):
    path = kubeconfig(tmp_path, f"https://127.0.0.1:{tls_front.port}", cluster_ca,
                      scheduler_identity, "s3cret")  # fmt: skip
    cluster = KubeClusterClient(api_client_from_kubeconfig(path))
    assert cluster.direct is not None  # the binds' own connections, not the REST layer
    make_pods(sim, "a", "b", "c")

    for name in ("a", "b", "c"):
        cluster.bind(cluster.get_pod("default", name), "n1")

    assert [node_of(sim, n) for n in ("a", "b", "c")] == ["n1", "n1", "n1"]
    binds = [s for s in tls_front.seen if s.path.endswith("/binding")]
    assert len(binds) == 3
    assert {(s.authorization, s.client_name) for s in binds} == {
        ("Bearer s3cret", "system:kube-scheduler")
    }
    assert cluster.direct.connections_opened == 1  # kept alive across the three
    cluster.close()


def test_a_server_certificate_the_kubeconfigs_ca_did_not_sign_is_refused_and_nothing_sent(
    sim, cluster_ca, scheduler_identity, tmp_path
):
    sim.core.create_node(body(node("n1", ready=True)))
    impostor = Authority("impostor")
    front = Front(sim.server.url, serving_context(impostor, tmp_path, ["127.0.0.1"]))
    try:
        path = kubeconfig(tmp_path, f"https://127.0.0.1:{front.port}", cluster_ca,
                          scheduler_identity, "s3cret")  # fmt: skip
        cluster = KubeClusterClient(api_client_from_kubeconfig(path))
        make_pods(sim, "a")
        with pytest.raises(ssl.SSLCertVerificationError):
            cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
        assert front.seen == [] and node_of(sim, "a") is None
    finally:
        front.stop()


def test_the_server_name_is_checked_and_tls_server_name_is_the_one_checked(
    sim, cluster_ca, scheduler_identity, tmp_path
):
    sim.core.create_node(body(node("n1", ready=True)))
    # A serving certificate for the API server's DNS name only, reached at its IP address.
    front = Front(sim.server.url, serving_context(cluster_ca, tmp_path, ["api.example.internal"]))
    try:
        make_pods(sim, "a")
        url = f"https://127.0.0.1:{front.port}"
        plain = KubeClusterClient(api_client_from_kubeconfig(
            kubeconfig(tmp_path, url, cluster_ca, scheduler_identity, "t")))  # fmt: skip
        with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
            plain.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
        named = KubeClusterClient(api_client_from_kubeconfig(kubeconfig(
            tmp_path, url, cluster_ca, scheduler_identity, "t",
            tls_server_name="api.example.internal")))  # fmt: skip
        named.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
        assert node_of(sim, "a") == "n1"
    finally:
        front.stop()


def test_a_proxy_or_a_wrapped_rest_client_keeps_the_rest_layer():
    configuration = client.Configuration(host="http://127.0.0.1:1")
    configuration.proxy = "http://proxy.example:3128"
    assert KubeClusterClient(client.ApiClient(configuration)).direct is None
    api = client.ApiClient(client.Configuration(host="http://127.0.0.1:1"))
    api.rest_client = _Recording(api.rest_client)  # type: ignore[assignment]
    assert KubeClusterClient(api).direct is None


class _Recording:
    def __init__(self, inner) -> None:  # noqa: ANN001
        self.inner, self.calls = inner, []

    def request(self, method, url, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        self.calls.append((method, url))
        return self.inner.request(method, url, *args, **kwargs)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.inner, name)


def test_a_wrapped_rest_client_sees_every_bind(sim, plain_front):
    api = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{plain_front.port}"))
    recording = _Recording(api.rest_client)
    api.rest_client = recording  # type: ignore[assignment]
    cluster = KubeClusterClient(api)
    make_pods(sim, "a")
    cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    assert recording.calls == [
        ("POST", api.configuration.host + "/api/v1/namespaces/default/pods/a/binding")
    ]
    assert node_of(sim, "a") == "n1"


# -- the fence -------------------------------------------------------------------------------


def test_binds_stop_leaving_the_process_once_the_lease_is_lost(sim, plain_front):
    cluster = plain_cluster(plain_front)
    assert cluster.direct is not None
    leading = [True]
    refused = fence_cluster_client(cluster, lambda: leading[0])
    make_pods(sim, "a", "b")

    cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    leading[0] = False
    with pytest.raises(NotLeader):
        cluster.bind({"metadata": {"namespace": "default", "name": "b"}}, "n1")

    assert [s.path.split("/")[-2] for s in plain_front.seen] == ["a"]  # b never left
    assert (node_of(sim, "a"), node_of(sim, "b")) == ("n1", None)
    assert refused == [1]


# -- errors, Retry-After, QPS, connections ---------------------------------------------------


def test_each_pods_refusal_is_its_own_and_the_other_binds_land(sim, plain_front):
    cluster = plain_cluster(plain_front)
    make_pods(sim, "ok1", "conflict", "throttled", "broken", "ok2")
    plain_front.answers = {"conflict": [(409, {})], "throttled": [(429, {})],
                           "broken": [(500, {})]}  # fmt: skip
    outcomes = {}
    for name in ("ok1", "conflict", "throttled", "broken", "ok2"):
        try:
            cluster.bind({"metadata": {"namespace": "default", "name": name}}, "n1")
            outcomes[name] = "bound"
        except ApiError as exc:
            outcomes[name] = (type(exc).__name__, exc.status, exc.obj)
    assert outcomes == {
        "ok1": "bound", "ok2": "bound",
        "conflict": ("Conflict", 409, "pod default/conflict"),
        "throttled": ("ApiError", 429, "pod default/throttled"),
        "broken": ("ApiError", 500, "pod default/broken"),
    }  # fmt: skip
    assert [node_of(sim, n) for n in ("ok1", "conflict", "throttled", "broken", "ok2")] == [
        "n1", None, None, None, "n1"]  # fmt: skip
    assert cluster.direct.connections_opened == 1  # an error answer does not cost the connection


def test_a_429_or_500_with_retry_after_is_sent_again_after_it_as_client_go_does(sim, plain_front):
    waits: list[float] = []
    cluster = plain_cluster(plain_front)
    cluster.sleep = waits.append
    make_pods(sim, "a", "b", "c")
    plain_front.answers = {
        "a": [(429, {"Retry-After": "1"}), (429, {"Retry-After": "2"})],
        "b": [(503, {"Retry-After": "1"})],
        "c": [(429, {"Retry-After": "1"})] * (RETRY_AFTER_TRIES + 1),
    }
    cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    cluster.bind({"metadata": {"namespace": "default", "name": "b"}}, "n1")
    assert waits == [1.0, 2.0, 1.0]
    with pytest.raises(ApiError) as refused:
        cluster.bind({"metadata": {"namespace": "default", "name": "c"}}, "n1")
    assert refused.value.status == 429
    assert (node_of(sim, "a"), node_of(sim, "b"), node_of(sim, "c")) == ("n1", "n1", None)
    assert len([s for s in plain_front.seen if "/c/" in s.path]) == RETRY_AFTER_TRIES + 1


def test_a_conflict_is_never_sent_again(sim, plain_front):
    cluster = plain_cluster(plain_front)
    cluster.sleep = lambda seconds: pytest.fail("slept on a 409")
    make_pods(sim, "a")
    plain_front.answers = {"a": [(409, {"Retry-After": "1"})]}
    with pytest.raises(Conflict):
        cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    assert len(plain_front.seen) == 1


def test_every_bind_and_every_retry_takes_a_token_of_the_qps_limiter(sim, plain_front):
    now, slept = [0.0], []
    limiter = TokenBucket(qps=2, burst=1, clock=lambda: now[0], sleep=slept.append)
    cluster = plain_cluster(plain_front, limiter=limiter)
    cluster.sleep = lambda seconds: None
    make_pods(sim, "a", "b")
    plain_front.answers = {"b": [(429, {"Retry-After": "0"})]}
    cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    cluster.bind({"metadata": {"namespace": "default", "name": "b"}}, "n1")
    assert slept == [0.5, 1.0]  # the burst of one spent, then 2/s: the 2nd and 3rd request wait


def test_a_connection_the_server_closed_while_idle_is_not_reused(sim, plain_front):
    cluster = plain_cluster(plain_front)
    make_pods(sim, "a", "b")
    cluster.bind({"metadata": {"namespace": "default", "name": "a"}}, "n1")
    plain_front.drop_connections()
    cluster.bind({"metadata": {"namespace": "default", "name": "b"}}, "n1")
    assert (node_of(sim, "a"), node_of(sim, "b")) == ("n1", "n1")
    assert cluster.direct.connections_opened == 2


def test_binds_from_several_threads_each_keep_one_connection(sim, plain_front):
    cluster = plain_cluster(plain_front)
    names = [f"p{i}" for i in range(40)]
    make_pods(sim, *names)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: cluster.bind(
            {"metadata": {"namespace": "default", "name": n}}, "n1"), names))  # fmt: skip
    assert all(node_of(sim, n) == "n1" for n in names)
    assert cluster.direct.connections_opened <= 4
    cluster.close()


class Scripted:
    """A raw TCP server answering each request with the next scripted bytes, sent in pieces
    of ``piece`` bytes (an answer split anywhere), and recording what it was sent."""

    def __init__(self, answers: list[bytes], piece: int = 7) -> None:
        self.answers, self.piece = list(answers), piece
        self.requests: list[bytes] = []
        self.accepted = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while self.answers:
                connection, _ = self.listener.accept()
                self.accepted += 1
                with connection:
                    while self.answers:
                        head = b""
                        while b"\r\n\r\n" not in head:
                            data = connection.recv(65536)
                            if not data:
                                break
                            head += data
                        if not head:
                            break
                        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                        body = head.split(b"\r\n\r\n", 1)[1]
                        while len(body) < length:
                            body += connection.recv(65536)
                        self.requests.append(head)
                        answer = self.answers.pop(0)
                        for i in range(0, len(answer), self.piece):
                            connection.sendall(answer[i : i + self.piece])
                        if b"Connection: close" in answer or answer.endswith(b"<EOF>"):
                            break


def _direct(url: str) -> DirectRest:
    direct = direct_rest(client.ApiClient(client.Configuration(host=url)))
    assert direct is not None
    return direct


def test_answers_split_anywhere_chunked_interim_or_closing_are_each_read_whole():
    """The binds' own HTTP/1.1 reader: a Content-Length body, a chunked body with an extension
    and a trailer, a 100 Continue before the answer, headers repeated, an answer whose body
    ends when the server closes — each arriving 7 bytes at a time."""
    ok = b'{"kind":"Status","status":"Success"}'
    server = Scripted([
        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(ok), ok),
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n"
        b"Warning: 299 - a\r\nWarning: 299 - b\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\n"
        b"Trailer-Field: t\r\n\r\n",
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.0 500 Internal Server Error\r\n\r\nthe body ends with the connection<EOF>",
    ])  # fmt: skip
    direct = _direct(server.url)
    post = lambda: direct.request("POST", server.url + "/api/v1/x", {"A": "b"}, b"{}")  # noqa: E731
    first = post()
    assert (first.status, first.reason, first.data) == (201, "Created", ok)
    assert first.getheader("content-type") == "application/json"
    second = post()
    assert (second.status, second.data) == (201, b"hello world")
    assert second.getheader("Warning") == "299 - a, 299 - b"
    third = post()
    assert (third.status, third.getheader("Retry-After"), third.data) == (429, "1", b"{}")
    fourth = post()
    assert (fourth.status, fourth.data) == (500, b"the body ends with the connection<EOF>")
    assert server.accepted == 1 and direct.connections_opened == 1
    assert server.requests[0].startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nA: b\r\n" in server.requests[0] and b"Content-Length: 2\r\n" in server.requests[0]
    direct.close()


def test_an_answer_that_is_not_http_or_closes_midway_raises_and_its_connection_is_not_reused():
    server = Scripted([
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort",
        b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\nunasked bytes",
        b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    ])  # fmt: skip
    direct = _direct(server.url)
    post = lambda: direct.request("POST", server.url + "/x", {}, b"{}")  # noqa: E731
    with pytest.raises(http.client.HTTPException, match="not an HTTP/1.x status line"):
        post()
    with pytest.raises(http.client.RemoteDisconnected):
        post()  # the body promised 100 bytes and the server closed after 5
    assert post().status == 201  # read whole; the bytes after it were never asked for...
    assert post().status == 201  # ...so the next request goes over a new connection
    assert direct.connections_opened == 4


def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent():
    server = Scripted([b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"])
    direct = _direct(server.url)
    with pytest.raises(ValueError, match="line break"):
        direct.request("POST", server.url + "/x", {"Authorization": "Bearer a\r\nX-Evil: 1"}, b"")
    assert server.requests == []
    assert direct.request("POST", server.url + "/x", {}, b"").status == 201


def test_headers_past_the_limit_are_refused_however_they_arrive():
    """64 KiB of status line and headers at most, as http.client: also when the read that
    crosses the limit brings the end of the headers with it."""
    from scheduler.kube.transport import MAX_HEADER_BYTES

    big = b"X-Big: " + b"a" * (MAX_HEADER_BYTES - 20) + b"\r\n"
    answer = b"HTTP/1.1 201 Created\r\n" + big + b"Content-Length: 0\r\n\r\n"
    server = Scripted([answer], piece=MAX_HEADER_BYTES - 5)  # the end comes with the 2nd read
    direct = _direct(server.url)
    with pytest.raises(http.client.HTTPException, match="headers are too long"):
        direct.request("POST", server.url + "/x", {}, b"")
