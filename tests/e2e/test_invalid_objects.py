"""One object Sluice cannot use never blinds the scheduler for everyone (Part 10, item 14).

A pod any namespace user can create asked for ``cpu: 1e400``: every cycle then failed with an
OverflowError (104 in a row, until the pod was deleted) and nothing else was scheduled. Pods
asking for ``"abc"`` or ``"-1Gi"`` were dropped without a word. Now each such object is left out
and said once — an event with reason ``InvalidObject`` naming the field and the value and, on a
pod, ``PodScheduled=False`` with reason ``InvalidSpec`` (not ``Unschedulable``: no autoscaler
must buy a node for it) — and listed by every cycle, while the good pods bind in the same cycle.

What kube-apiserver itself takes, and so how each bad pod gets into the simulated cluster:

* ``cpu: 1e400`` — accepted. ``resource.ParseQuantity`` parses it (a ``DecimalExponent``
  quantity of 10^400, kept as an ``inf.Dec``: only binary-suffixed values such as ``8Ei`` are
  capped, at 2^63-1), and pod validation checks requests only for being non-negative (and
  integral, for extended resources). So it is created through the API, as a user would.
* ``cpu: "abc"`` — refused with **400 Bad Request** while the request body is decoded, before
  admission: ``Pod in version "v1" cannot be handled as a Pod: quantities must match the
  regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'``.
* ``memory: "-1Gi"`` — parses, then refused by validation with **422 Invalid**:
  ``spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater than
  or equal to 0``.

The simulated API server answers as kube-apiserver does (checked here), so those two are
written into its store directly (``h.store.create``): they stand for objects written before a
validation tightened, or by a controller writing to etcd past the API's checks — what a
scheduler must survive all the same.
"""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.api.report import PodState, TransitionKind
from scheduler.api.status import Code
from tests.builders import body, node, pod, podgroup, queue
from tests.e2e.admission.flow import start
from tests.e2e.harness import Harness, condition

NS = "team"
SCENARIO = {
    "namespaces": [{"name": NS}, {"name": "default"}],  # events of cluster objects go there
    "queues": [{"name": "q"}],
    "nodes": [
        {"name": n, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}} for n in ("n1", "n2")
    ],
}
GOOD = ("good-1", "good-2", "good-3")
BAD = {  # pod -> (the field Sluice names, what it says about the value)
    "huge": ("spec.containers[0].resources.requests.cpu", "invalid quantity '1e400': too large"),
    "abc": ("spec.containers[0].resources.requests.cpu", "invalid quantity 'abc'"),
    "negative": (
        "spec.containers[0].resources.requests.memory",
        "invalid quantity '-1Gi': must not be negative",
    ),
}


def a_pod(name: str, cpu: str = "1", memory: str = "1Gi", *, guaranteed: bool = False) -> dict:
    return pod(name, cpu, memory, namespace=NS, queue="q", guaranteed=guaranteed,
               uid=None, created=None)  # fmt: skip


def refusal(h: Harness, obj: dict) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        h.core.create_namespaced_pod(NS, body(obj))
    return caught.value.status, json.loads(caught.value.body)


def create_pods(h: Harness, *, guaranteed: bool = False) -> None:
    """The good pods and ``huge`` through the API; ``abc`` and ``negative`` through the store,
    once the API has refused them as kube-apiserver does."""
    for name in GOOD:
        h.core.create_namespaced_pod(NS, body(a_pod(name, guaranteed=guaranteed)))
    h.core.create_namespaced_pod(NS, body(a_pod("huge", "1e400", guaranteed=guaranteed)))

    abc = a_pod("abc", "abc", guaranteed=guaranteed)
    code, status = refusal(h, abc)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    negative = a_pod("negative", memory="-1Gi", guaranteed=guaranteed)
    code, status = refusal(h, negative)
    assert (code, status["reason"]) == (422, "Invalid")
    assert (
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater '
        "than or equal to 0"
    ) in status["message"]
    for obj in (abc, negative):
        h.store.create("pods", obj)


def events(h: Harness, name: str) -> list:
    selector = f"involvedObject.name={name},involvedObject.kind=Pod"
    return h.core.list_namespaced_event(NS, field_selector=selector).items


def invalid_events(h: Harness, name: str) -> list:
    return [e for e in events(h, name) if e.reason == "InvalidObject"]


def node_of(h: Harness, name: str) -> str:
    return (h.pod(name, NS).get("spec") or {}).get("nodeName") or ""


def check_the_story(h: Harness) -> None:
    h.step(1)
    first = h.reports[0]
    assert first.failure == ""
    # The good pods bind in the very cycle that met the bad ones.
    allocated = {t.name for t in first.transitions if t.kind is TransitionKind.ALLOCATED}
    assert allocated == set(GOOD)
    assert all(node_of(h, name) for name in GOOD)
    # The cycle report lists each bad pod, with the field; the pods page shows it waiting.
    listed = {o.name: o for o in first.invalid}
    assert set(listed) == set(BAD)
    waiting = {w.name: w for w in first.waiting}
    for name, (field, words) in BAD.items():
        assert (listed[name].kind, listed[name].field) == ("pod", field)
        assert words in listed[name].message
        assert (waiting[name].state, waiting[name].status.code) == (
            PodState.WAITING,
            Code.INVALID_OBJECT,
        )
        assert field in waiting[name].status.message and waiting[name].queue == "q"
        # On the pod: one Warning event, and a PodScheduled condition autoscalers ignore.
        (event,) = invalid_events(h, name)
        assert event.type == "Warning" and field in event.message and words in event.message
        scheduled = condition(h.pod(name, NS))
        assert (scheduled["status"], scheduled["reason"]) == ("False", "InvalidSpec")
        assert field in scheduled["message"] and words in scheduled["message"]
        assert node_of(h, name) == ""

    h.step(3)
    for report in h.reports[1:]:
        assert report.failure == ""
        assert {o.name for o in report.invalid} == set(BAD)  # listed by every cycle
    for name in BAD:
        assert len(invalid_events(h, name)) == 1  # but said once
        assert condition(h.pod(name, NS))["reason"] == "InvalidSpec"

    # A change that changes the problem is said again, once.
    h.store.mutate("pods", NS, "negative", _memory("-2Gi"))
    h.step(2)
    said = sorted(e.message for e in invalid_events(h, "negative"))
    assert len(said) == 2 and ["'-1Gi'" in said[0], "'-2Gi'" in said[1]] == [True, True]
    assert "'-2Gi'" in condition(h.pod("negative", NS))["message"]


def _memory(value: str):
    def change(obj: dict) -> None:
        obj["spec"]["containers"][0]["resources"]["requests"]["memory"] = value

    return change


def test_bad_pods_are_said_once_and_the_good_ones_bind_in_the_same_cycle():
    h = Harness(SCENARIO)
    try:
        create_pods(h)
        check_the_story(h)
    finally:
        h.close()


def test_the_same_with_the_admission_check_on():
    """The OverflowError came from the node-capacity check's evaluator: with the check on, the
    Guaranteed pods it evaluates are the good ones only."""
    h = start(SCENARIO, check=True)
    try:
        create_pods(h, guaranteed=True)
        check_the_story(h)
    finally:
        h.close()


def test_a_pod_fixed_in_place_is_forgotten_and_scheduled():
    """Through the store (the API would refuse the change: a pod's resources are immutable):
    once the pod reads, it is an ordinary pod again and no longer listed."""
    h = Harness(SCENARIO)
    try:
        h.store.create("pods", a_pod("abc", "abc"))
        h.step(1)
        assert [o.name for o in h.reports[-1].invalid] == ["abc"]
        h.store.mutate("pods", NS, "abc", _cpu("1"))
        h.step(1)
        assert h.reports[-1].invalid == []
        assert node_of(h, "abc")
    finally:
        h.close()


def _cpu(value: str):
    def change(obj: dict) -> None:
        obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = value

    return change


def test_a_podgroup_a_queue_and_a_node_sluice_cannot_use():
    """Custom resources pass the CRD's pattern with ``-1Gi`` and ``1e400`` (the pattern sets
    no bound and allows a sign), so these go through the API; a node's status is the kubelet's
    to write, and one that says ``abc`` stands for a broken kubelet (through the store)."""
    h = Harness(SCENARIO)
    group, version = "scheduling.volcano.sh", "v1beta1"
    try:
        bad_group = podgroup("pg", 1, namespace=NS, queue="q", min_resources={"memory": "-1Gi"})
        h.custom.create_namespaced_custom_object(group, version, NS, "podgroups", body(bad_group))
        h.core.create_namespaced_pod(NS, body(pod("member", namespace=NS, group="pg",
                                                  uid=None, created=None)))  # fmt: skip
        bad_queue = queue("huge-q", capability={"cpu": "1e400"}, uid=None, created=None)
        h.custom.create_cluster_custom_object(group, version, "queues", body(bad_queue))
        h.core.create_namespaced_pod(NS, body(pod("queued", namespace=NS, queue="huge-q",
                                                  uid=None, created=None)))  # fmt: skip
        h.store.create("nodes", node("n3", cpu="abc", ready=True, uid=None, created=None))
        h.core.create_namespaced_pod(NS, body(a_pod("fine")))

        h.step(3)

        report = h.reports[-1]
        assert all(r.failure == "" for r in h.reports)
        assert {(o.kind, o.name, o.field) for o in report.invalid} == {
            ("podgroup", "pg", "spec.minResources.memory"),
            ("queue", "huge-q", "spec.capability.cpu"),
            ("node", "n3", "status.allocatable.cpu"),
        }
        assert node_of(h, "fine") in ("n1", "n2")
        waiting = {w.name: w.status for w in report.waiting}
        assert waiting["member"].code is Code.INVALID_OBJECT
        assert "podgroup team/pg is invalid: spec.minResources.memory" in waiting["member"].message
        assert waiting["queued"].code is Code.QUEUE_INVALID
        assert "queue huge-q is invalid: spec.capability.cpu" in waiting["queued"].message
        for name in ("member", "queued"):  # waiting for a fix, not for a node
            assert condition(h.pod(name, NS)).get("reason") != "Unschedulable"
        for namespace, kind, name in (
            (NS, "PodGroup", "pg"),
            ("default", "Queue", "huge-q"),
            ("default", "Node", "n3"),
        ):
            selector = f"involvedObject.name={name},involvedObject.kind={kind}"
            said = h.core.list_namespaced_event(namespace, field_selector=selector).items
            assert [e.reason for e in said if e.reason == "InvalidObject"] == ["InvalidObject"]
    finally:
        h.close()
