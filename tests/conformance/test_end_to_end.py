"""A sample of Volcano's test cases end to end: the case's objects created through the simulated
cluster's API (as kubectl would), its configuration written to a file, one
``manage.py schedule --once --mode act --scheduler-conf FILE``, and the decisions read back
from the cluster — pods bound, evicted, nominated; PodGroup phases — against the same
expectations as the in-process run (``runner.compare``).

The sample covers every action and the queue plugins. ``SLUICE_CONFORMANCE_E2E=all`` runs every
case that does not depend on object identity this way (slow; for investigation)."""

from __future__ import annotations

import io
import os
import re

import pytest
import yaml
from django.core.management import call_command
from kubernetes import client

from scheduler.api.labels import GROUP_NAME_ANNOTATION
from tests.conformance import runner
from tests.simcluster.api.conftest import start_sim

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
# One or more per action and queue plugin; each passes whatever UIDs the server assigns (cases
# whose outcome hangs on Volcano's test UIDs to break a tie are left to the in-process run).
SAMPLE = {
    "TestEnqueue/pggroup cannot enqueue because queue resources are less than podgroup "
    "MinResources",
    "TestEnqueue/when podgroup status is pending",
    "TestEnqueueAndAllocatable/case4: queue with non-open state, can not enqueue",
    "TestAllocate/case0: Pods are assigned according to the order of Queue Priority in which "
    "PGs are placed",
    "TestFareShareAllocate/queue with low DRF share value has high priority, should allocate first",
    "TestPreempt/preempt low priority job in same queue",
    "TestPreempt/rollback evictions when preemptor exceeds queue capacity after evicting victims",
    "TestPreempt/do not preempt if job is pipelined",
    "TestReclaim/Two Queue with one Queue overusing resource, should reclaim",
    "TestReclaim/can not reclaim resources when queue is not open(proportion plugin)",
    "Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case5: Can reclaim from other queues "
    "when allocated + req <= deserved on one dimension",
    "Test_capacityPlugin_OnSessionOpenWithoutHierarchy/case8: reclaimer dimensions are "
    "considered properly while evicting reclaimees",
    "Test_capacityPlugin_OnSessionOpenWithHierarchy/case3: Can reclaim from other queues "
    "when allocated < deserved",
    "Test_capacityPlugin_OnSessionOpenWithHierarchy/case4: Pod is not allocatable when "
    "ancestor queue's real capability not enough",
    "Test_capacityPlugin_AncestorReclaimScenarios/case6: level 1 allows reclaim when "
    "parent-level check passes",
    "TestNodeOrderPlugin/leastAllocated strategy",
}


def e2e_cases() -> list[runner.Case]:
    cases = [c for c in runner.load_cases() if not c.skip and usable(c)]
    if os.environ.get("SLUICE_CONFORMANCE_E2E") == "all":
        return cases
    chosen = [c for c in cases if c.id in SAMPLE]
    assert len(chosen) == len(SAMPLE), sorted(SAMPLE - {c.id for c in chosen})
    return chosen


def usable(case: runner.Case) -> bool:
    """Cases a real API server can hold as written: no second cycle, no test-only plugin, no
    pod priority set without a class (kube-apiserver's Priority admission refuses it)."""
    raw = case.raw
    if raw.get("next") or any(
        p.get("name") in runner.TEST_PLUGINS
        for tier in raw.get("tiers") or []
        for p in tier.get("plugins") or []
    ):
        return False
    if any(p.get("priority") is not None for p in raw.get("pods") or []):
        return False
    names = [q["name"] for q in raw.get("queues") or []]  # Volcano's tests use "case1_queue1"
    return all(re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", n) for n in names)


@pytest.mark.parametrize("case", e2e_cases(), ids=lambda c: c.id)
def test_volcano_case_through_the_api(case, tmp_path):
    sim = start_sim()
    try:
        created = create_objects(sim, case.raw)
        conf = tmp_path / "volcano-scheduler.conf"
        conf.write_text(yaml.safe_dump(runner.configuration(case.raw)))
        kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
        out, err = io.StringIO(), io.StringIO()
        call_command(
            "schedule", "--kubeconfig", str(kubeconfig), "--once", "--mode", "act",
            "--scheduler-conf", str(conf), stdout=out, stderr=err,
        )  # fmt: skip
        outcome = read_outcome(sim, case.raw, created)
    finally:
        sim.api_client.close()
        sim.server.stop()
    problems = runner.compare(case.expected(), outcome)
    assert not problems, f"{case.source} {case.id}:\n" + "\n".join(problems) + "\n" + out.getvalue()


def create_objects(sim, raw: dict) -> set[str]:
    """Create the case's objects through the API; the pods that were bound at creation."""
    core, custom = sim.core, sim.custom
    scheduling = client.SchedulingV1Api(sim.api_client)
    namespaces = {pg.get("namespace", "default") for pg in raw.get("podgroups") or []}
    namespaces |= {p.get("namespace", "default") for p in raw.get("pods") or []}
    for ns in sorted(namespaces - {"default"}):
        core.create_namespace({"metadata": {"name": ns}})
    for pc in raw.get("priorityClasses") or []:
        scheduling.create_priority_class({"metadata": {"name": pc["name"]}, "value": pc["value"]})
    predicates = any(
        p.get("name") == "predicates"
        for tier in raw.get("tiers") or []
        for p in tier.get("plugins") or []
    )
    for q in raw.get("queues") or []:
        obj = runner.queue(q)
        custom.create_cluster_custom_object(*VOLCANO, "queues", strip(obj))
        custom.patch_cluster_custom_object_status(
            *VOLCANO, "queues", obj["metadata"]["name"], {"status": obj["status"]}
        )
    for n in raw.get("nodes") or []:
        core.create_node(strip(runner.node(n, predicates=predicates), keep_status=True))
    for pg in raw.get("podgroups") or []:
        obj = runner.podgroup(pg)
        ns = obj["metadata"]["namespace"]
        custom.create_namespaced_custom_object(*VOLCANO, ns, "podgroups", strip(obj))
        custom.patch_namespaced_custom_object_status(
            *VOLCANO, ns, "podgroups", obj["metadata"]["name"], {"status": obj["status"]}
        )
    bound, deleting = set(), set()
    for p in raw.get("pods") or []:
        obj = runner.pod(p)
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        core.create_namespaced_pod(ns, strip(obj))
        if obj["spec"].get("nodeName"):
            bound.add(f"{ns}/{name}")
        phase = obj["status"]["phase"]
        if phase != "Pending":
            sim.store.mutate(
                "pods", ns, name, lambda o, phase=phase: o["status"].update(phase=phase)
            )
        if obj["metadata"].get("deletionTimestamp"):  # terminating: a graceful delete
            core.delete_namespaced_pod(name, ns, grace_period_seconds=300)
            deleting.add(f"{ns}/{name}")
    return bound | {f"deleting:{k}" for k in deleting}


def strip(obj: dict, *, keep_status: bool = False) -> dict:
    """A create request: no uid or status (the server sets them), no deletion stamp."""
    out = {**obj, "metadata": {k: v for k, v in obj["metadata"].items()
                               if k not in ("uid", "deletionTimestamp")}}  # fmt: skip
    if not keep_status:
        out.pop("status", None)
    return out


def read_outcome(sim, raw: dict, bound_before: set[str]) -> runner.Outcome:
    binds: dict[str, str] = {}
    evicted: list[str] = []
    pipelined: dict[str, list[str]] = {}
    pods, _ = sim.store.list("pods")  # the command returns once its writes are done
    by_name = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
    for p in raw.get("pods") or []:
        key = f"{p.get('namespace', 'default')}/{p['name']}"
        obj = by_name.get(key)
        if f"deleting:{key}" in bound_before:
            continue  # terminating before the cycle
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            evicted.append(key)
            continue
        node = obj["spec"].get("nodeName")
        if node and key not in bound_before:
            binds[key] = node
        nominated = (obj.get("status") or {}).get("nominatedNodeName")
        group = (obj["metadata"].get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        if nominated and not node:
            pipelined.setdefault(f"{obj['metadata']['namespace']}/{group}", []).append(nominated)
    phases = {}
    for pg in raw.get("podgroups") or []:
        ns = pg.get("namespace", "default")
        got = sim.custom.get_namespaced_custom_object(*VOLCANO, ns, "podgroups", pg["name"])
        phases[f"{ns}/{pg['name']}"] = (got.get("status") or {}).get("phase", "")
    return runner.Outcome(binds, evicted, pipelined, phases)
