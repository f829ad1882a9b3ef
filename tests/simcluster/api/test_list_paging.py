"""Lists page with ``limit`` and ``continue`` as kube-apiserver's do, through the client."""

from __future__ import annotations

import base64
import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from simcluster.api import ApiServer, Cluster
from simcluster.store import Store
from tests.builders import body, namespace, node, pod
from tests.simcluster.api.conftest import start_sim
from tests.simcluster.api.helpers import http


def _names(items) -> list[str]:
    return [i.metadata.name for i in items]


def _create(sim, names: str | list[str], ns: str = "default") -> None:
    for name in names:
        sim.core.create_namespaced_pod(ns, body(pod(name)))


def test_limit_and_continue_return_every_pod_once_in_key_order(sim):
    _create(sim, ["e", "a", "d", "c", "b"])
    first = sim.core.list_namespaced_pod("default", limit=2)
    assert _names(first.items) == ["a", "b"]
    assert first.metadata._continue and first.metadata.remaining_item_count == 3
    second = sim.core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert _names(second.items) == ["c", "d"]
    third = sim.core.list_namespaced_pod("default", limit=2, _continue=second.metadata._continue)
    assert _names(third.items) == ["e"] and not third.metadata._continue
    assert third.metadata.resource_version == first.metadata.resource_version


def test_later_pages_are_the_first_pages_snapshot(sim):
    """What changes between pages does not show: a page is the list at the first page's
    resourceVersion (etcd serves that revision; the store rebuilds it from the log)."""
    _create(sim, ["a", "b", "c", "d"])
    first = sim.core.list_namespaced_pod("default", limit=2)
    sim.core.delete_namespaced_pod("c", "default", grace_period_seconds=0)
    sim.core.patch_namespaced_pod("d", "default", {"metadata": {"labels": {"late": "yes"}}})
    _create(sim, ["bb"])
    rest = sim.core.list_namespaced_pod("default", _continue=first.metadata._continue)
    assert _names(rest.items) == ["c", "d"]  # c not deleted yet, no bb, d unlabelled
    assert not (rest.items[1].metadata.labels or {}).get("late")
    now = sim.core.list_namespaced_pod("default")
    assert _names(now.items) == ["a", "b", "bb", "d"]


def test_a_selector_filters_before_the_limit_counts(sim):
    for i in range(6):
        labels = {"app": "web" if i % 2 else "db"}
        sim.core.create_namespaced_pod("default", body(pod(f"p{i}", labels=labels)))
    pages, token = [], None
    while True:
        page = sim.core.list_namespaced_pod(
            "default", label_selector="app=web", limit=2, _continue=token
        )
        pages.append(_names(page.items))
        token = page.metadata._continue
        if not token:
            break
    assert pages[0] == ["p1", "p3"] and [n for p in pages for n in p] == ["p1", "p3", "p5"]


def test_cluster_scoped_and_all_namespaces_lists_page(sim):
    for i in range(5):
        sim.core.create_node(body(node(f"n{i}")))
    sim.core.create_namespace(body(namespace("other")))
    _create(sim, ["x", "y"], "other")
    _create(sim, ["z"])
    nodes, token = [], None
    while True:
        page = sim.core.list_node(limit=2, _continue=token)
        nodes += _names(page.items)
        token = page.metadata._continue
        if not token:
            break
    assert nodes == [f"n{i}" for i in range(5)]
    first = sim.core.list_pod_for_all_namespaces(limit=2)
    assert [(p.metadata.namespace, p.metadata.name) for p in first.items] == [
        ("default", "z"),
        ("other", "x"),
    ]
    rest = sim.core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert _names(rest.items) == ["y"] and not rest.metadata._continue


def test_a_continue_token_older_than_the_log_is_410_with_a_token_to_go_on():
    sim = start_sim(watch_log_size=3)
    try:
        _create(sim, ["a", "b", "c"])
        first = sim.core.list_namespaced_pod("default", limit=1)
        _create(sim, ["d", "e", "f", "g"])  # the pods' log drops the first page's version
        code, status = http(
            sim.server.url,
            "GET",
            f"/api/v1/namespaces/default/pods?limit=1&continue={first.metadata._continue}",
        )
        assert code == 410 and status["reason"] == "Expired"
        assert "too old to display a consistent list result" in status["message"]
        fresh = status["metadata"]["continue"]
        rest = sim.core.list_namespaced_pod("default", _continue=fresh)
        assert _names(rest.items) == ["b", "c", "d", "e", "f", "g"]
        with pytest.raises(ApiException) as caught:
            sim.core.list_namespaced_pod("default", _continue=first.metadata._continue)
        assert caught.value.status == 410
    finally:
        sim.api_client.close()
        sim.server.stop()


def test_a_malformed_continue_token_is_a_bad_request(sim):
    for token in ("not-base64!", base64.urlsafe_b64encode(b'{"v":"x"}').decode()):
        code, status = http(sim.server.url, "GET", f"/api/v1/pods?continue={token}")
        assert code == 400 and "invalid continue token" in status["message"]


def test_continue_with_a_resource_version_is_a_bad_request(sim):
    _create(sim, ["a", "b"])
    first = sim.core.list_namespaced_pod("default", limit=1)
    path = f"/api/v1/pods?resourceVersion=1&continue={first.metadata._continue}"
    assert http(sim.server.url, "GET", path)[0] == 400


def test_the_token_is_kube_apiservers_shape(sim):
    _create(sim, ["a", "b"])
    first = sim.core.list_namespaced_pod("default", limit=1)
    token = first.metadata._continue
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {
        "v": "meta.k8s.io/v1",
        "rv": int(first.metadata.resource_version),
        "start": "default/a\x00",
    }


def test_kubectl_chunks_through_a_table_list(sim, kubectl):
    """kubectl get asks for 500 rows at a time; --chunk-size=2 makes it page through Tables."""
    _create(sim, ["a", "b", "c", "d", "e"])
    out = kubectl("get", "pods", "--chunk-size=2", "-o", "name").stdout.split()
    assert out == [f"pod/{n}" for n in "abcde"]
    table = kubectl("get", "pods", "--chunk-size=2", "--no-headers").stdout.splitlines()
    assert [line.split()[0] for line in table] == list("abcde")


def test_a_list_copies_only_what_it_returns(monkeypatch):
    """A page of 10 out of 2,000 copies 10 objects, not 2,000 (kube-apiserver's cost)."""
    import simcluster.store as store_module

    store = Store(time.time)
    cluster = Cluster(store, time.time)
    cluster.create_object("namespaces", body(namespace("default")))
    for i in range(2_000):
        store.create("pods", pod(f"p{i:04d}", namespace="default"))
    copies = []
    real = store_module._copy
    monkeypatch.setattr(store_module, "_copy", lambda obj: copies.append(1) or real(obj))
    with ApiServer(cluster) as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        page = client.CoreV1Api(api).list_namespaced_pod("default", limit=10)
        api.close()
    assert len(page.items) == 10 and len(copies) == 10
    copies.clear()
    items = cluster.list("pods", "default", fields="metadata.name=p0042")[0]
    assert [i["metadata"]["name"] for i in items] == ["p0042"] and len(copies) == 1
