"""Part 10, the node-capacity admission check (Kueue KEP-3211, README "Node-capacity
admission check") when real life happens, through the simulated cluster's API with a real
scheduler on virtual time.

The promise (issue 15 item 12, README): "What was admitted since the snapshot was taken
counts as used ... The scheduler keeps a ledger of the workloads the check admitted (by
PodGroup uid) ... A pod leaves the ledger once a snapshot lists it on a node ..., and a
workload once it is deleted or back to Pending." An admitted workload holds its room until
then; a second workload is never admitted into the same room.
"""

from __future__ import annotations

import pytest

from tests.builders import body, pod, podgroup
from tests.e2e.admission.flow import NS, capacity_condition, node_of, phase, start, workload
from tests.e2e.harness import condition

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
WAIT_GATE = "example.com/wait-for-volumes"  # another controller's gate: not Sluice's to lift


@pytest.fixture
def harnesses():
    """``make(scenario, ...)``: a Harness whose scheduler has the check (as
    tests/e2e/admission/conftest.py's fixture of the same name); all closed after the test."""
    started = []

    def make(*args, **kwargs):
        started.append(start(*args, **kwargs))
        return started[-1]

    yield make
    for h in started:
        h.close()


def one_node(cpu: str) -> dict:
    return {
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "100"}}}],
        "nodes": [{"name": "n0", "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }


def test_an_admitted_workload_whose_pod_is_recreated_before_binding_keeps_its_room(harnesses):
    """One node, 4 CPU. ``first`` (one Guaranteed 3-CPU pod) is admitted — the check placed it
    on n0 and its ledger holds the 3 CPU — but its pod waits for another controller's gate
    (volumes being attached), so it is not bound. Its controller then replaces the pod (same
    name, new uid: a Job recreating a pod, ``kubectl replace --force``). ``first`` is still
    admitted (Inqueue) and still needs 3 CPU. ``second`` (3 CPU) arrives before the next
    snapshot: only 1 CPU is left for it, so the check must hold it
    (``InsufficientNodeCapacity``), and ``first`` must run once its gate goes.

    What happens: ``AdmittedLedger.reconcile`` drops a pod whose uid is no longer live and
    never takes up the replacement (``record`` runs only at admission), so ``first`` is left
    in the ledger with no pod and then dropped: ``second`` is admitted against the stale
    snapshot's 4 free CPUs and bound to n0; when ``first``'s gate goes, ``first`` waits
    "Insufficient cpu" for ever — the false admission the check exists to prevent."""
    h = harnesses(one_node("4"))
    h.step(1)  # the monitor's snapshot: n0 empty, 4 CPU free
    workload(h, "first", "3", schedulingGates=[{"name": WAIT_GATE}])
    h.step(2)
    assert phase(h, "first") == "Inqueue" and node_of(h, "first") == ""
    old = h.pod("first", NS)
    h.core.delete_namespaced_pod("first", NS, grace_period_seconds=0)
    h.step(1)
    keep = ("name", "namespace", "labels", "annotations")
    again = {"metadata": {k: v for k, v in old["metadata"].items() if k in keep},
             "spec": old["spec"]}  # fmt: skip
    h.core.create_namespaced_pod(NS, again)
    h.step(1)
    workload(h, "second", "3")
    h.step(3)
    assert node_of(h, "second") == "", capacity_condition(h, "second")
    assert phase(h, "second") == "Pending"
    h.core.patch_namespaced_pod("first", NS, {"spec": {"schedulingGates": None}})
    h.step(3)
    assert node_of(h, "first") == "n0", condition(h.pod("first", NS))


@pytest.mark.parametrize("check", [True, False], ids=["check-on", "check-off"])
def test_a_podgroup_with_an_absurd_min_resources_blinds_no_one(harnesses, check):
    """Regression (passes today). Issue 15 item 14 and README "Objects Sluice cannot use":
    a PodGroup whose ``minResources`` Sluice cannot count (``cpu: 1e400``, which Volcano's CRD
    pattern accepts) next to a valid pod of its own: the PodGroup is left out, its pod waits
    with the reason (never Unschedulable), and another workload in the same queue is admitted
    and runs in the same cycles, with the node-capacity check on and off."""
    h = harnesses(one_node("4"), check=check)
    bad = podgroup("bad", 1, namespace=NS, queue="q", min_resources={"cpu": "1e400"})
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(bad))
    member = pod("member", "1", namespace=NS, group="bad", guaranteed=True)
    h.core.create_namespaced_pod(NS, body(member))
    workload(h, "fine", "1")
    h.step(3)
    assert node_of(h, "fine") == "n0"
    assert [r.failure for r in h.reports if r.failure] == []
    waiting = condition(h.pod("member", NS))
    assert waiting["reason"] != "Unschedulable"
    assert "spec.minResources.cpu" in waiting["message"]


def test_a_podgroup_created_before_its_pods_is_not_declared_to_fit(harnesses):
    """README: "A Guaranteed workload is admitted only if all its pods can be placed together"
    and a workload that fails "stays Pending with the PodGroup condition
    NodeCapacityAvailable (False ...)". Volcano's job controller (and the Spark and Kubeflow
    operators, as scheduler/actions/enqueue.py says) creates the PodGroup first and its pods
    only once the PodGroup is Inqueue — the check must judge such a workload before any pod
    exists, as Kueue judges a Workload from its pod sets. Here the PodGroup says minMember 1,
    minResources 6 CPU: its one pod needs at least 6 CPU, and the only node has 4. It must
    not be admitted with ``NodeCapacityAvailable=True`` and then run nowhere.

    What happens: ``evaluate`` answers FITS for an empty pod list ("the workload has no
    pods") and the check writes ``NodeCapacityAvailable: True`` on the PodGroup, which turns
    Inqueue; its 6-CPU pod, created next, waits ``Insufficient cpu`` for ever. Every Volcano
    Job bypasses the check this way."""
    h = harnesses(one_node("4"))
    h.step(1)
    group = podgroup("job", 1, namespace=NS, queue="q", min_resources={"cpu": "6", "memory": "1Gi"})
    h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
    h.step(2)
    said = capacity_condition(h, "job")
    assert (said.get("status"), said.get("reason")) != ("True", "NodeCapacityAvailable"), said
    assert phase(h, "job") == "Pending", said
