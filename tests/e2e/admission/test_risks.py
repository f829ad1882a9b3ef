"""The cycle report's false-admission risks: every Pending or not-yet-running Inqueue workload,
any QoS class, classified with the evaluator's explanation; unchanged workloads are not
evaluated again; node groups of the simulated autoscaler offer "fits after scale-up"."""

from __future__ import annotations

import pytest

from scheduler.admission import report
from tests.e2e.admission.flow import capacity_condition, phase, risk_of, workload

NODES = [
    {"name": n, "capacity": {"cpu": "4", "memory": "64Gi", "pods": "110"}} for n in ("n0", "n1")
]
FOREIGN_GATE = [{"name": "example.com/hold"}]
GROUP = {
    "name": "big",
    "min": 0,
    "max": 2,
    "template": {"labels": {"size": "big"}, "capacity": {"cpu": "16", "memory": "64Gi"}},
}


def scenario(*, node_groups: list | None = None) -> dict:
    """Two 4-CPU nodes; queue q's capability is 8 CPU (with the hierarchy, Sluice's default,
    a queue without one is unlimited: the cluster's size is the nodes' business)."""
    return {
        "namespaces": [{"name": "team"}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "8"}}}],
        "nodes": NODES,
        "nodeGroups": node_groups or [],
        "kubelet": {"startupDelay": 1},
    }


@pytest.fixture
def assessed(monkeypatch) -> list[int]:
    """Counts assess_risk calls (one per workload evaluated for the report)."""
    calls: list[int] = []
    real = report.assess_risk

    def counting(pods, snapshot, **kwargs):
        calls.append(len(pods))
        return real(pods, snapshot, **kwargs)

    monkeypatch.setattr(report, "assess_risk", counting)
    return calls


def test_every_class_with_its_explanation(harnesses):
    h = harnesses(scenario(node_groups=[GROUP]), node_groups=True)
    workload(h, "small", "1", schedulingGates=FOREIGN_GATE)  # admitted; another gate holds it
    workload(h, "wide", "5")  # held: fits only a node of group "big"
    workload(h, "mars", "0.5", nodeSelector={"zone": "mars"})  # no node, no group matches
    workload(h, "over", "9")  # beyond the queue's 8 CPU
    h.step(2)

    risks = {r.name: r for r in h.reports[-1].risks}
    assert (risks["small"].risk, risks["small"].phase) == ("fits_now", "Inqueue")
    assert risks["small"].check_state == "Ready"  # read back from its condition
    assert risks["wide"].risk == "fits_after_scale_up"
    assert "fits after adding 1 node(s) to group big" in risks["wide"].explanation
    assert risks["wide"].check_state == "Retry"
    assert risks["mars"].risk == "fits_no_node_shape"
    assert "no node group can add a node it fits" in risks["mars"].explanation
    assert risks["over"].risk == "waiting_for_queue" and risks["over"].check_state is None
    assert "the queue has no room for it yet" in risks["over"].explanation
    assert all(r.certain for r in risks.values())
    small = h.pod("small", "team")["metadata"]["uid"]
    assert risks["small"].pod_uids == [small]  # a waiting pod finds its workload's risk


def test_without_node_groups_scale_up_is_not_offered(harnesses):
    h = harnesses(scenario(node_groups=[GROUP]))  # groups exist, but the scheduler is not told
    workload(h, "wide", "5")
    h.step(1)
    risk = risk_of(h, "wide")
    assert risk.risk == "fits_no_node_shape" and "no node groups to grow" in risk.explanation


def test_a_burstable_workload_is_admitted_unchecked_but_its_risk_is_reported(harnesses):
    h = harnesses(scenario())
    workload(h, "loose", "5", guaranteed=False)
    h.step(2)
    assert phase(h, "loose") == "Inqueue"  # the KEP admits non-Guaranteed workloads
    assert capacity_condition(h, "loose") == {}  # and records nothing on them
    risk = risk_of(h, "loose")
    assert (risk.risk, risk.phase) == ("fits_no_node_shape", "Inqueue")
    assert "5 CPU" in risk.explanation


def test_an_unchanged_workload_is_not_evaluated_again_until_the_snapshot_changes(
    harnesses, assessed
):
    h = harnesses(scenario())
    workload(h, "wide", "5")
    h.step(2)  # the first cycle's pod condition changes the pod's resourceVersion once
    settled = len(assessed)
    h.step(5)
    assert len(assessed) == settled <= 2
    assert [r.name for r in h.reports[-1].risks] == ["wide"]  # reported from the cache
    h.snapshots.refresh()
    h.step(1)
    assert len(assessed) == settled + 1


def test_no_snapshot_no_risks(harnesses):
    h = harnesses(scenario())
    h.service.admission.snapshot_source = lambda: None
    workload(h, "wide", "5")
    h.step(2)
    assert h.reports[-1].risks == []
    assert capacity_condition(h, "wide")["reason"] == "WaitingForSnapshot"
    assert phase(h, "wide") == "Pending"
