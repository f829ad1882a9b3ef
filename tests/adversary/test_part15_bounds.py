"""Adversary, Part 15 (what-if lab): bounds bypassed and figures that leave pods out.

Promises: "an experiment must stay bounded" (spec.py: pods ≤ 2,000, horizon ≤ 24 h, cycles
≤ 2,000, variants ≤ 8; a trace cluster ≤ 1,523 nodes), and the comparison shows "pods that
never ran" for the workload (issue: "pod wait time ..., evictions, pods that never ran")."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dashboard.whatif import runner
from dashboard.whatif.spec import SpecError, load

GATES = yaml.safe_load(Path("dashboard/whatif/examples/gates.yaml").read_text())


def test_pods_arriving_after_the_horizon_are_not_silently_left_out_of_the_figures():
    """Sent: the gate-burst example (15 pods at t=0, horizon 300 s), one variant, plus 5
    pods arriving at t=1000 s. Today: load accepts it and the result says "8 of 15 pods never
    ran" — the 5 late pods are in neither "pods" (15) nor "never ran" (8), though the
    workload has 20 pods and 13 of them never ran. The same happens to a recorded window
    longer than 24 h: views.sourced_experiment clamps the horizon to 24 h and every pod
    recorded after it vanishes from the figures. Fault: runner._results counts only the pods
    the simulation created (runner.PodSeen), spec.load does not check arrivals against the
    horizon. Either refusing the file or counting the late pods as never run would do."""
    data = copy.deepcopy(GATES)
    data["variants"] = data["variants"][1:]
    data["workload"]["scenario"]["workload"].append(
        {
            "at": 1000,
            "name": "late",
            "namespace": "team",
            "queue": "wide",
            "replicas": 5,
            "requests": {"cpu": "1", "memory": "1Gi"},
            "duration": 10,
        }  # fmt: skip
    )
    try:
        spec = load(data)
    except SpecError as exc:
        assert "horizon" in str(exc)
        return
    summary = runner.run(spec)[0]["summary"]
    assert summary["pods"] == 20
    assert summary["never_ran"] == 13


def test_a_connected_cluster_copy_is_bounded_like_a_trace_cluster():
    """Sent: a frozen recorded workload (1 pod) on a frozen copy of a 'connected' cluster of
    5,000 nodes. Today: accepted (sources.check_connected wants at least one node, no
    most), while a trace workload is held to 1,523 nodes — the node bound is bypassed
    through the cluster copy of a hand-edited exported file."""
    nodes = [
        {"name": f"n{i}", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
        for i in range(5000)
    ]
    pod = {"at": 0, "namespace": "t", "name": "p", "queue": "default",
           "requests": {"cpu": "1"}, "duration": 10}  # fmt: skip
    data = {
        "workload": {"recorded": {"pods": [pod]}},
        "cluster": {"connected": {"nodes": nodes}},
        "variants": [{"name": "a"}],
    }
    with pytest.raises(SpecError, match="nodes"):
        load(data)
