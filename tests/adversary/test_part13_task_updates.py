"""A pod update reuses the requests and node constraints of the task it replaces when their spec
fields are unchanged (scheduler.api.task_info after 7d8300d): every update that does change
them must still be read, through the simulated cluster's HTTP API and a real scheduler."""

from __future__ import annotations

from tests.adversary.helpers import cycle, make_node, make_pod, node_of, start_service
from tests.builders import body, node

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_a_toleration_added_to_a_pending_pod_is_read_by_the_next_cycle(sim):
    """Kubernetes lets a pod's tolerations grow; the only node is tainted. Before the
    toleration the pod waits; once the update adds it the pod binds there."""
    sim.core.create_node(body(node("tainted", cpu="4", ready=True, taints=[TAINT])))
    make_pod(sim, "p", image="busybox")
    service = start_service(sim)
    try:
        cycle(sim, service)
        assert node_of(sim, "p") is None
        toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu",
                      "effect": "NoSchedule"}  # fmt: skip
        sim.core.patch_namespaced_pod(
            "p", "default", {"metadata": {"labels": {"touched": "1"}}}
        )  # an update that changes no spec field first: the task is reused
        cycle(sim, service)
        assert node_of(sim, "p") is None
        sim.core.patch_namespaced_pod("p", "default", {"spec": {"tolerations": [toleration]}})
        cycle(sim, service)
    finally:
        service.stop()
    assert node_of(sim, "p") == "tainted"


def test_requests_changed_in_place_are_read_again(sim):
    """An in-place resize (the kubelet's, here written to the store as the resize subresource
    would) raises the pod's request past the only node: the pod must stop fitting, though an
    update that did not change its containers came just before."""
    make_node(sim, "n1", cpu="2")
    make_pod(sim, "p", cpu="1")
    sim.store.mutate("pods", "default", "p", lambda p: p["metadata"].update(labels={"a": "b"}))

    def grow(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"

    service = start_service(sim)
    try:
        sim.store.mutate("pods", "default", "p", grow)
        report = cycle(sim, service)
    finally:
        service.stop()
    assert node_of(sim, "p") is None
    assert [t.name for t in report.transitions] == []


def test_an_invalid_quantity_arriving_in_an_update_is_refused_and_reported(sim):
    """A pod the cache read fine turns invalid in an update (a quantity the API server would
    have refused, written past it): it is left out and reported as invalid, not scheduled with
    the requests its earlier version had."""
    make_node(sim, "n1", cpu="2")
    make_pod(sim, "p", cpu="1")
    make_pod(sim, "filler", cpu="1")

    def spoil(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "one"

    service = start_service(sim)
    try:
        sim.store.mutate("pods", "default", "p", spoil)
        report = cycle(sim, service)
    finally:
        service.stop()
    assert node_of(sim, "p") is None
    invalid = [(o.kind, o.name, o.field) for o in report.invalid]
    assert ("pod", "p", "spec.containers[0].resources.requests.cpu") in invalid, report.invalid


def test_a_pod_valid_again_after_an_invalid_version_is_read_whole(sim):
    """The previous version was refused (not in the cache): the fixed one is read from
    scratch, with its own request (3 cpu does not fit 2), not anything older."""
    make_node(sim, "n1", cpu="2")
    make_pod(sim, "p", cpu="1")

    def spoil(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "one"

    def fix(pod: dict) -> None:
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"

    service = start_service(sim)
    try:
        sim.store.mutate("pods", "default", "p", spoil)
        first = cycle(sim, service)
        sim.store.mutate("pods", "default", "p", fix)
        second = cycle(sim, service)
    finally:
        service.stop()
    assert [o.name for o in first.invalid] == ["p"]
    assert second.invalid == []
    assert node_of(sim, "p") is None


def test_a_pod_deleted_and_created_again_under_its_name_is_read_anew(sim):
    """Same name, new object (new uid, other request and constraints): nothing of the old
    task may carry over."""
    sim.core.create_node(body(node("tainted", cpu="8", ready=True, taints=[TAINT])))
    make_node(sim, "small", cpu="1")
    make_pod(sim, "p", cpu="4")
    service = start_service(sim)
    try:
        cycle(sim, service)
        assert node_of(sim, "p") is None  # 4 cpu fit only the tainted node
        sim.core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
        make_pod(sim, "p", cpu="1")
        cycle(sim, service)
    finally:
        service.stop()
    assert node_of(sim, "p") == "small"
