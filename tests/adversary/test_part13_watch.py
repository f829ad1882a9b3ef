"""Watch streams of the simulated cluster after events waiting together leave in one chunk
(simcluster.api.server ``_send_stream``, simcluster.api.watch ``CAUGHT_UP``), through the HTTP
API: the kubernetes client's ``watch.Watch().stream``, the scheduler's informer reader, raw
chunked reads and ``kubectl get -w``."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
from urllib.parse import urlsplit

from kubernetes import watch

from simcluster.api.server import STREAM_CHUNK
from tests.builders import body, namespace, pod


def _pod(name: str, ns: str = "default", **kwargs) -> dict:
    obj = body(pod(name, "1", namespace=ns, **kwargs))
    obj["metadata"]["namespace"] = ns  # for the store's own create (the API takes the path's)
    return obj


def _version(sim) -> str:
    return sim.core.list_namespaced_pod("default").metadata.resource_version


class Collector:
    """A kubernetes-client watch in a thread: the names (and types) it saw, or its error."""

    def __init__(self, call, *args, **kwargs) -> None:
        self.events: list[tuple[str, str]] = []
        self.error: BaseException | None = None
        self.first_at: float | None = None
        self._thread = threading.Thread(target=self._run, args=(call, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, call, args, kwargs) -> None:
        try:
            for event in watch.Watch().stream(call, *args, **kwargs):
                if self.first_at is None:
                    self.first_at = time.monotonic()
                self.events.append((event["type"], event["object"].metadata.name))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def test_a_burst_larger_than_one_chunk_arrives_whole_in_order_through_the_client(sim):
    """Hundreds of events that were all waiting when the watcher looked: several chunks of
    ``STREAM_CHUNK`` bytes, lines cut across chunk boundaries by the client's reads."""
    version = _version(sim)
    collector = Collector(
        sim.core.list_namespaced_pod, "default", resource_version=version, timeout_seconds=4
    )
    time.sleep(0.3)
    filler = "x" * 1500
    names = [f"burst-{i:03d}" for i in range(150)]
    with sim.store.locked():  # all of them waiting together
        for name in names:
            sim.store.create("pods", _pod(name, annotations={"filler": filler}))
    collector.join(10)
    assert collector.error is None
    assert 2 * STREAM_CHUNK < 150 * 1500
    assert collector.events == [("ADDED", name) for name in names]


def _raw_watch(url: str, path: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", path)
    return connection, connection.getresponse()


def test_events_waiting_together_leave_in_one_chunk_and_never_exceed_much_past_the_limit(sim):
    """Chunk framing read by hand: a burst of events comes as few chunks, each holding whole
    lines (a chunk never ends in the middle of an event), none far past ``STREAM_CHUNK``."""
    version = _version(sim)
    parts = urlsplit(sim.server.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    path = f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={version}&timeoutSeconds=2"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(0.3)
    with sim.store.locked():
        for i in range(100):
            sim.store.create("pods", _pod(f"c{i:03d}", annotations={"filler": "y" * 1000}))
    data = b""
    while not data.endswith(b"\r\n0\r\n\r\n"):
        more = sock.recv(65536)
        if not more:
            break
        data += more
    sock.close()
    body_start = data.index(b"\r\n\r\n") + 4
    rest = data[body_start:]
    chunks = []
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    lines = [json.loads(line) for chunk in chunks for line in chunk.splitlines()]
    assert [e["object"]["metadata"]["name"] for e in lines] == [f"c{i:03d}" for i in range(100)]
    assert all(chunk.endswith(b"\n") for chunk in chunks)
    assert len(chunks) < 10  # batched, not one chunk per event
    biggest_line = max(len(line) for chunk in chunks for line in chunk.splitlines())
    assert max(len(chunk) for chunk in chunks) < STREAM_CHUNK + biggest_line + 1


def test_a_lone_event_is_not_held_back(sim):
    """Nothing else is waiting: the single event must leave at once, not wait for company."""
    collector = Collector(
        sim.core.list_namespaced_pod, "default", resource_version=_version(sim), timeout_seconds=3
    )
    time.sleep(0.5)
    created = time.monotonic()
    sim.core.create_namespaced_pod("default", _pod("alone"))
    deadline = time.monotonic() + 2
    while collector.first_at is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert collector.first_at is not None
    assert collector.first_at - created < 1.0  # (a loaded machine; a held event waits 3 s)
    collector.join(5)


def test_a_selective_namespaced_watch_in_a_burst_sees_only_its_own_with_enter_and_leave(sim):
    """Label selector and namespace in one burst: events outside are dropped, a pod leaving the
    selector is DELETED for the watcher, one entering it ADDED; nothing else leaks into the
    batch."""
    sim.cluster.create_object("namespaces", body(namespace("other")))
    sim.core.create_namespaced_pod("default", _pod("mover", labels={"app": "no"}))
    collector = Collector(
        sim.core.list_namespaced_pod,
        "default",
        label_selector="app=yes",
        resource_version=_version(sim),
        timeout_seconds=3,
    )
    time.sleep(0.3)
    with sim.store.locked():
        sim.store.create("pods", _pod("a", labels={"app": "yes"}))
        sim.store.create("pods", _pod("b", labels={"app": "no"}))
        sim.store.create("pods", _pod("c", ns="other", labels={"app": "yes"}))
        sim.store.mutate("pods", "default", "mover", lambda p: p["metadata"].update(
            labels={"app": "yes"}))  # fmt: skip
        sim.store.mutate("pods", "default", "mover", lambda p: p["metadata"].update(
            labels={"app": "no"}))  # fmt: skip
    collector.join(10)
    assert collector.error is None
    assert collector.events == [("ADDED", "a"), ("ADDED", "mover"), ("DELETED", "mover")]


def test_a_watch_from_a_compacted_version_gets_410_then_the_stream_ends(sim):
    for i in range(30):
        sim.store.create("pods", _pod(f"old{i}"))
    sim.store._logs["pods"].compacted = int(sim.store.resource_version) - 5  # as a full log
    _, response = _raw_watch(
        sim.server.url, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1"
    )
    events = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410


def test_a_client_gone_mid_burst_leaves_the_server_serving_other_watchers(sim):
    parts = urlsplit(sim.server.url)
    version = _version(sim)
    quitter = socket.create_connection((parts.hostname, parts.port), timeout=5)
    quitter.sendall(
        f"GET /api/v1/namespaces/default/pods?watch=true&resourceVersion={version} HTTP/1.1\r\n"
        "Host: x\r\n\r\n".encode()
    )
    collector = Collector(
        sim.core.list_namespaced_pod, "default", resource_version=version, timeout_seconds=3
    )
    time.sleep(0.3)
    with sim.store.locked():
        for i in range(60):
            sim.store.create("pods", _pod(f"q{i:02d}", annotations={"filler": "z" * 2000}))
    quitter.recv(1000)  # the first bytes of the burst, then gone
    quitter.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    quitter.close()
    sim.core.create_namespaced_pod("default", _pod("after"))
    collector.join(10)
    assert collector.error is None
    assert [n for _, n in collector.events] == [f"q{i:02d}" for i in range(60)] + ["after"]
    # The server still answers plain requests.
    assert sim.core.read_namespaced_pod("after", "default").metadata.name == "after"


def test_kubectl_get_watch_shows_each_pod_of_a_burst_once(sim, kubectl_binary, tmp_path):
    """``kubectl get -w`` (Table output): the pods of a burst that leaves in one chunk are each
    shown once, in order."""
    watches: list[str] = []
    sim.server.recorder = lambda attrs: attrs.verb == "watch" and watches.append(attrs.resource)
    config = sim.server.write_kubeconfig(tmp_path / "kc")
    process = subprocess.Popen(
        [kubectl_binary, "--kubeconfig", str(config), "get", "pods", "-n", "default",
         "-w", "--no-headers"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")))
    reader.start()
    try:
        deadline = time.monotonic() + 20
        while not watches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watches, "kubectl never started its watch"
        with sim.store.locked():
            for i in range(40):
                sim.store.create("pods", _pod(f"k{i:02d}"))
        deadline = time.monotonic() + 20
        while len(lines) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
        reader.join(5)
    names = [line.split()[0] for line in lines if line.strip()]
    assert names == [f"k{i:02d}" for i in range(40)], err
