"""Watch: ordered, resumable, 410 Gone when the version is too old."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from tests.builders import binding, body, namespace, pod, queue
from tests.simcluster.api.conftest import start_sim
from tests.simcluster.api.helpers import http

SMP = "application/strategic-merge-patch+json"


def collect(stream_source, count: int, **kwargs) -> list[tuple[str, str, str]]:
    """The first ``count`` events as (type, name, resourceVersion)."""
    watcher, events = watch.Watch(), []
    for event in watcher.stream(stream_source, timeout_seconds=5, **kwargs):
        meta = event["object"].metadata
        events.append((event["type"], meta.name, meta.resource_version))
        if len(events) == count:
            watcher.stop()
    return events


def test_watch_delivers_events_in_order_from_a_resource_version(sim):
    start = sim.core.list_namespaced_pod("default").metadata.resource_version
    sim.core.create_namespaced_pod("default", body(pod("a")))
    sim.core.create_namespaced_pod("default", body(pod("b")))
    sim.core.patch_namespaced_pod(
        "a", "default", {"metadata": {"labels": {"x": "1"}}}, _content_type=SMP
    )
    sim.core.delete_namespaced_pod("b", "default")
    events = collect(sim.core.list_namespaced_pod, 4, namespace="default", resource_version=start)
    assert [(t, n) for t, n, _ in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    versions = [int(v) for *_, v in events]
    assert versions == sorted(versions)


def test_watch_resumes_after_the_last_seen_version(sim):
    start = sim.core.list_namespaced_pod("default").metadata.resource_version
    sim.core.create_namespaced_pod("default", body(pod("a")))
    first = collect(sim.core.list_namespaced_pod, 1, namespace="default", resource_version=start)
    sim.core.create_namespaced_pod("default", body(pod("b")))
    resumed = collect(
        sim.core.list_namespaced_pod, 1, namespace="default", resource_version=first[0][2]
    )
    assert [(t, n) for t, n, _ in resumed] == [("ADDED", "b")]


def test_watch_without_a_version_starts_with_the_current_objects(sim):
    sim.core.create_namespaced_pod("default", body(pod("a")))
    events = collect(sim.core.list_pod_for_all_namespaces, 1)
    assert events[0][:2] == ("ADDED", "a")


def test_watch_sees_objects_created_while_it_waits(sim):
    import threading

    start = sim.core.list_namespaced_pod("default").metadata.resource_version
    timer = threading.Timer(
        0.3, lambda: sim.core.create_namespaced_pod("default", body(pod("late")))
    )
    timer.start()
    events = collect(sim.core.list_namespaced_pod, 1, namespace="default", resource_version=start)
    timer.join()
    assert events[0][:2] == ("ADDED", "late")


def test_watch_filters_by_selector_and_namespace(sim):
    sim.core.create_namespace(body(namespace("other")))
    start = sim.core.list_namespace().metadata.resource_version
    sim.core.create_namespaced_pod("other", body(pod("elsewhere", labels={"app": "web"})))
    sim.core.create_namespaced_pod("default", body(pod("skip", labels={"app": "db"})))
    sim.core.create_namespaced_pod("default", body(pod("keep", labels={"app": "web"})))
    events = collect(
        sim.core.list_namespaced_pod,
        1,
        namespace="default",
        label_selector="app=web",
        resource_version=start,
    )
    assert events[0][:2] == ("ADDED", "keep")


def test_watch_from_a_too_old_version_is_410_gone():
    sim = start_sim(watch_log_size=3)
    try:
        for name in "abcde":
            sim.core.create_namespaced_pod("default", body(pod(name)))
        watcher = watch.Watch()
        with pytest.raises(ApiException) as caught:
            for _ in watcher.stream(
                sim.core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=5
            ):
                pass
        assert caught.value.status == 410
        assert "too old resource version" in str(caught.value.reason)
    finally:
        sim.server.stop()


def test_watch_error_event_carries_a_410_status():
    sim = start_sim(watch_log_size=3)
    try:
        for name in "abcde":
            sim.core.create_namespaced_pod("default", body(pod(name)))
        response = sim.core.list_namespaced_pod(
            "default", watch=True, resource_version="1", _preload_content=False
        )
        import json

        event = json.loads(response.readline())
        response.release_conn()
        assert event["type"] == "ERROR"
        assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410
        assert event["object"]["reason"] == "Expired"
    finally:
        sim.server.stop()


def test_exact_list_at_an_old_version_is_410(sim):
    sim.core.create_namespaced_pod("default", body(pod("a")))
    code, status = http(
        sim.server.url, "GET", "/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact"
    )
    assert code == 410 and status["reason"] == "Expired"


def test_custom_resource_watch(sim):
    start = sim.custom.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues")[
        "metadata"
    ]["resourceVersion"]
    sim.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", body(queue("q1"))
    )
    watcher = watch.Watch()
    for event in watcher.stream(
        sim.custom.list_cluster_custom_object,
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        resource_version=start,
        timeout_seconds=5,
    ):
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "q1")
        watcher.stop()


def test_an_object_leaving_a_field_selector_is_deleted_for_that_watcher(sim):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    start = sim.core.list_namespaced_pod("default").metadata.resource_version
    http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/web-1/binding",
        binding("web-1", "node-1"),
    )
    unassigned = collect(
        sim.core.list_pod_for_all_namespaces,
        1,
        field_selector="spec.nodeName=",
        resource_version=start,
    )
    assigned = collect(
        sim.core.list_pod_for_all_namespaces,
        1,
        field_selector="spec.nodeName=node-1",
        resource_version=start,
    )
    assert unassigned[0][:2] == ("DELETED", "web-1")
    assert assigned[0][:2] == ("ADDED", "web-1")


def test_each_kind_keeps_its_own_log():
    """A pod watcher is not sent away (410) by a flood of node changes: each kind has its own
    log, as kube-apiserver's watch cache has one per resource."""
    sim = start_sim(watch_log_size=3)
    try:
        sim.core.create_namespaced_pod("default", body(pod("a")))
        start = sim.core.list_namespaced_pod("default").metadata.resource_version
        for i in range(10):
            sim.cluster.create_object("nodes", {"metadata": {"name": f"n{i}"}})
        sim.core.create_namespaced_pod("default", body(pod("b")))
        events = [
            (e["type"], e["object"].metadata.name)
            for e in watch.Watch().stream(
                sim.core.list_namespaced_pod,
                "default",
                resource_version=start,
                timeout_seconds=1,
            )
        ]
        assert events == [("ADDED", "b")]
    finally:
        sim.api_client.close()
        sim.server.stop()


def _chunks(reader) -> Iterator[bytes]:
    """The chunks of a chunked HTTP body, as the server framed them."""
    while True:
        size = int(reader.readline().split(b";")[0], 16)
        if size == 0:
            return
        data = reader.read(size)
        assert reader.read(2) == b"\r\n"
        yield data


def test_events_waiting_together_leave_in_one_chunk_and_a_lone_event_leaves_at_once(sim):
    """kube-apiserver's watch handler flushes only when no further event is waiting (``if
    len(ch) == 0 { flusher.Flush() }``): a burst of changes reaches a watcher in a few writes,
    not one per event, while a single change is not held back."""
    start = sim.core.list_namespaced_pod("default").metadata.resource_version
    for i in range(50):
        sim.core.create_namespaced_pod("default", body(pod(f"p{i}")))
    host, port = sim.server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(
            f"GET /api/v1/namespaces/default/pods?watch=true&resourceVersion={start}"
            f"&timeoutSeconds=10 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        )
        reader = connection.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 200")
        while reader.readline() not in (b"\r\n", b""):
            pass
        chunks = _chunks(reader)
        burst = next(chunks)
        names = [json.loads(line)["object"]["metadata"]["name"] for line in burst.splitlines()]
        assert names == [f"p{i}" for i in range(50)]
        created = time.monotonic()
        sim.core.create_namespaced_pod("default", body(pod("late")))
        lone = next(chunks)
        assert time.monotonic() - created < 2.0
        assert [json.loads(line)["object"]["metadata"]["name"] for line in lone.splitlines()] == [
            "late"
        ]
