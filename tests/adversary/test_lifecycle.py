"""Whole lifecycles through the simulated cluster (kubelet included, virtual time): PodGroup
status as Volcano writes it, the effective pod request, best-effort preemption."""

from __future__ import annotations

from kubernetes import client

from tests.builders import body, pod, podgroup
from tests.e2e.harness import Harness

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
DURATION = "sim.sluice.io/duration"  # the simulated kubelet runs a pod this many seconds


def scenario(cpu: str = "4", pods: str = "110") -> dict:
    capacity = {"cpu": cpu, "memory": "16Gi", "pods": pods}
    return {"namespaces": [{"name": "default"}], "nodes": [{"name": "n1", "capacity": capacity}],
            "kubelet": {"startupDelay": 1}}  # fmt: skip


def test_podgroup_status_counts_follow_its_pods():
    """Volcano's jobStatus (pkg/scheduler/framework/session.go) sets ``status.running``,
    ``succeeded`` and ``failed`` from the job's tasks every session, and JobUpdater writes the
    status whenever any of it changed (isPodGroupStatusUpdated compares the whole status, not
    only phase and conditions). ``kubectl get podgroups`` shows RUNNINGS from it. Sluice's
    _update_podgroup returns early when the phase and the condition are unchanged, so the
    counts freeze at the moment the PodGroup turned Running: here ``running`` stays 3 and
    ``succeeded`` 0 while one pod has finished."""
    h = Harness(scenario())
    try:
        h.custom.create_namespaced_custom_object(
            *VOLCANO, "default", "podgroups", body(podgroup("g", 2, namespace="default"))
        )
        for i, seconds in enumerate((4, 100, 100)):
            member = pod(f"g-{i}", "1", namespace="default", group="g",
                         annotations={DURATION: str(seconds)})  # fmt: skip
            h.core.create_namespaced_pod("default", body(member))
        h.step(10)
        phases = [h.pod(f"g-{i}")["status"]["phase"] for i in range(3)]
        assert phases == ["Succeeded", "Running", "Running"]
        status = h.store.get("podgroups", "default", "g")["status"]
        assert status["phase"] == "Running"
        assert (status.get("running"), status.get("succeeded")) == (2, 1), status
    finally:
        h.close()


def test_sidecars_count_only_beside_the_init_containers_started_after_them():
    """Kubernetes' PodRequests (k8s.io/component-helpers/resource): a regular init container
    runs beside the sidecars started *before* it. On a 4-CPU node with 1 CPU taken:

    * ``late-sidecar``: init 3 CPU, then a 1-CPU sidecar, app 1 CPU -> max(3, 1+1) = 3: fits;
    * ``early-sidecar``: a 1-CPU sidecar, then init 3 CPU, app 1 CPU -> max(1+3, 1+1) = 4:
      does not fit, and must not be bound (the kubelet would reject it with OutOfcpu).

    (Regression test: passes today.)"""
    h = Harness(scenario())
    try:
        h.core.create_namespaced_pod("default", body(pod("taken", "1", namespace="default")))
        h.step(2)
        sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                   "resources": {"requests": {"cpu": "1"}}}  # fmt: skip
        setup = {"name": "setup", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}
        for name, inits in (
            ("late-sidecar", [setup, sidecar]),
            ("early-sidecar", [sidecar, setup]),
        ):
            shaped = pod(name, "1", namespace="default", init_containers=inits)
            h.core.create_namespaced_pod("default", body(shaped))
            h.step(3)
        assert h.pod("late-sidecar")["status"]["phase"] == "Running"
        early = h.pod("early-sidecar")
        assert early["spec"].get("nodeName") is None and early["status"]["phase"] == "Pending"
    finally:
        h.close()


def test_a_best_effort_pod_is_preempted_for_the_pods_slot():
    """Volcano issue #3335: a node full only on its ``pods`` slots; a higher-priority pod
    evicts a lower-priority best-effort pod to get a slot, is pipelined, then bound.
    (Regression test: passes today.)"""
    h = Harness(scenario(pods="2"))
    try:
        api = client.SchedulingV1Api(h.api)
        api.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
        api.create_priority_class({"metadata": {"name": "low"}, "value": 1})
        for i in range(2):
            be = pod(f"be-{i}", None, None, namespace="default", priority_class="low", grace=1)
            h.core.create_namespaced_pod("default", body(be))
        h.step(3)
        urgent = pod("urgent", "1", namespace="default", priority_class="high")
        h.core.create_namespaced_pod("default", body(urgent))
        h.step(6)
        kinds = [(t.name, t.kind.value) for r in h.reports for t in r.transitions]
        assert sum(1 for name, kind in kinds if kind == "evicted") == 1, kinds
        assert h.pod("urgent")["spec"].get("nodeName") == "n1"
    finally:
        h.close()
