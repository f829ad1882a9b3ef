"""A list selecting events by ``reason`` reads only the events of that reason (the store's
index on it, as kube-apiserver's watch cache indexes the fields its lists select), and returns
what a scan of every event returns: after creates, updates that change the reason, deletes, a
reload, in namespaces, with other terms, and on later pages of a paged list."""

from __future__ import annotations

import time

import pytest

from simcluster.api import Cluster
from simcluster.store import Store
from tests.builders import body, namespace
from tests.simcluster.api.conftest import start_sim

REASONS = ("Started", "NotTriggerScaleUp", "TriggeredScaleUp")


def _event(name: str, reason: str, ns: str = "default", event_type: str = "Normal") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
        "reason": reason,
        "message": f"{reason} {name}",
        "type": event_type,
        "source": {"component": "test"},
    }


def _cluster() -> Cluster:
    cluster = Cluster(Store(time.time), time.time)
    for ns in ("default", "other"):
        cluster.create_object("namespaces", body(namespace(ns)))
    return cluster


def _names(items: list[dict]) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items]


def _scanned(cluster: Cluster, namespace: str | None, fields: str) -> list[str]:
    """What a list without the index returns: every event matched by the selector."""
    from simcluster.api.selectors import field_selector

    match = field_selector("events", fields)
    return _names(cluster.store.list_page("events", namespace, match=match).items)


def test_a_reason_list_reads_only_the_events_of_that_reason():
    cluster = _cluster()
    for i in range(3_000):
        cluster.store.create("events", _event(f"e{i:04d}", "Started"))
    for i in range(5):
        cluster.store.create("events", _event(f"up{i}", "TriggeredScaleUp"))
    read = []
    real = cluster.store.list_page

    def counting(kind, namespace=None, *, match=None, **kw):
        counted = None if match is None else (lambda obj: read.append(1) or match(obj))
        return real(kind, namespace, match=counted, **kw)

    cluster.store.list_page = counting  # type: ignore[method-assign]
    items = cluster.list("events", None, fields="reason=TriggeredScaleUp")[0]
    assert _names(items) == [f"default/up{i}" for i in range(5)]
    assert len(read) == 5  # without the index: 3,005 events matched one by one


def test_the_index_follows_creates_updates_deletes_and_a_reload():
    cluster = _cluster()
    store = cluster.store
    for i in range(30):
        store.create("events", _event(f"e{i:02d}", REASONS[i % 3], ns=("default", "other")[i % 2]))
    # An update that changes the reason moves the event; one that keeps it leaves it.
    for name, ns in (("e00", "default"), ("e04", "default")):
        store.mutate("events", ns, name, lambda e: e.update(reason="TriggeredScaleUp"))
    store.mutate("events", "other", "e05", lambda e: e.update(message="changed"))
    store.delete("events", "default", "e02")
    store.delete("events", "other", "e01")

    def agree() -> None:
        for reason in (*REASONS, "Unknown", ""):
            for ns in (None, "default", "other"):
                for fields in (f"reason={reason}", f"reason=={reason},type=Normal",
                               f"type=Normal,reason={reason}", f"reason={reason},type=Warning"):  # fmt: skip
                    listed = _names(cluster.list("events", ns, fields=fields)[0])
                    assert listed == _scanned(cluster, ns, fields), (ns, fields)

    agree()
    assert "default/e00" in _names(
        cluster.list("events", None, fields="reason=TriggeredScaleUp")[0]
    )
    assert "default/e00" not in _names(cluster.list("events", None, fields="reason=Started")[0])
    store.load(store.dump())  # a restored state: the index is rebuilt from the objects
    agree()
    store.create("events", _event("late", "NotTriggerScaleUp"))
    agree()


def test_a_later_page_of_an_indexed_list_is_the_first_pages_snapshot():
    """An event whose reason changed after the first page is listed as it was then (the
    snapshot), and one that got the reason since is not, as without the index."""
    cluster = _cluster()
    store = cluster.store
    for i in range(6):
        store.create("events", _event(f"e{i}", "NotTriggerScaleUp" if i % 2 else "Started"))
    first = cluster.list_page("events", None, fields="reason=NotTriggerScaleUp", limit=1)
    assert _names(first.items) == ["default/e1"] and first.continue_
    store.mutate("events", "default", "e3", lambda e: e.update(reason="Started"))
    store.mutate("events", "default", "e4", lambda e: e.update(reason="NotTriggerScaleUp"))
    store.delete("events", "default", "e5")
    rest = cluster.list_page(
        "events", None, fields="reason=NotTriggerScaleUp", continue_=first.continue_
    )
    assert _names(rest.items) == ["default/e3", "default/e5"]
    assert [i["reason"] for i in rest.items] == ["NotTriggerScaleUp", "NotTriggerScaleUp"]
    now = cluster.list("events", None, fields="reason=NotTriggerScaleUp")[0]
    assert _names(now) == ["default/e1", "default/e4"]


@pytest.mark.parametrize("reason", ["TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown"])
def test_the_kubernetes_client_lists_events_by_reason(reason):
    """Through the API, as the dashboard's Autoscaler page asks (one list per reason)."""
    sim = start_sim()
    try:
        sim.cluster.create_object("namespaces", body(namespace("other")))
        for i, r in enumerate(["TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown"] * 3):
            ns = ("default", "other")[i % 2]
            sim.core.create_namespaced_event(ns, _event(f"e{i}", r, ns=ns))
        sim.core.patch_namespaced_event("e0", "default", {"reason": "ScaleDown"})
        listed = sim.core.list_event_for_all_namespaces(field_selector=f"reason={reason}").items
        expected = [
            f"{e['metadata']['namespace']}/{e['metadata']['name']}"
            for e in sim.store.list("events")[0]
            if e["reason"] == reason
        ]
        assert [f"{e.metadata.namespace}/{e.metadata.name}" for e in listed] == expected
        assert expected and all(e.reason == reason for e in listed)
    finally:
        sim.api_client.close()
        sim.server.stop()
