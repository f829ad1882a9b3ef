"""An experiment stays bounded: a cluster and a node group hold at most the openb trace
cluster's 1,523 nodes (``spec.MAX_NODES``) whichever way the file gives them; the verdict
never tells more waste as a saving."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dashboard.whatif import present
from dashboard.whatif.spec import MAX_NODES, SpecError, load, trace_length

GATES = yaml.safe_load(Path("dashboard/whatif/examples/gates.yaml").read_text())
TRACE = yaml.safe_load(Path("dashboard/whatif/examples/trace.yaml").read_text())
NODE = {"name": "n", "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}


def test_a_scenario_node_group_may_not_grow_past_the_bound():
    data = copy.deepcopy(GATES)
    data["workload"]["scenario"]["nodeGroups"][0]["max"] = MAX_NODES + 1
    with pytest.raises(SpecError, match="nodeGroups"):
        load(data)
    data["workload"]["scenario"]["nodeGroups"][0]["max"] = MAX_NODES
    load(data)


def test_a_trace_node_group_and_its_queues_are_bounded():
    for key, value in (("nodeGroupMax", MAX_NODES + 1), ("queues", 201), ("queues", 0)):
        data = copy.deepcopy(TRACE)
        data["workload"]["trace"][key] = value
        with pytest.raises(SpecError, match=key):
            load(data)


def test_the_last_pod_of_the_trace_may_start_a_window():
    data = copy.deepcopy(TRACE)
    data["workload"]["trace"]["skipPods"] = trace_length() - 1
    load(data)
    data["workload"]["trace"]["skipPods"] = trace_length()
    with pytest.raises(SpecError, match="skipPods"):
        load(data)


def test_a_connected_copy_node_group_is_bounded():
    pod = {"at": 0, "namespace": "t", "name": "p", "queue": "default",
           "requests": {"cpu": "1"}, "duration": 10}  # fmt: skip
    group = {"name": "copy-g", "min": 0, "max": MAX_NODES + 1, "provisionDelay": 60,
             "template": {"capacity": NODE["capacity"]}}  # fmt: skip
    data = {
        "workload": {"recorded": {"pods": [pod]}},
        "cluster": {"connected": {"nodes": [NODE], "nodeGroups": [group]}},
        "variants": [{"name": "a"}],
    }
    with pytest.raises(SpecError, match="nodeGroups"):
        load(data)


def test_more_waste_is_told_as_the_table_shows_it():
    base = {"pods": 10, "ran": 10, "never_ran": 0, "wait_p50": 1.0, "wait_p95": 2.0,
            "wait_max": 3.0, "scale_ups": 2, "false_scale_ups": 0, "landed_scale_ups": 2,
            "node_hours_bought": 1.0, "node_hours_wasted": 0.0, "evictions": 0,
            "scale_downs": 0, "marked_unschedulable": 0}  # fmt: skip
    words = present.compare(
        {"name": "A", "summary": base},
        {"name": "B", "summary": {**base, "node_hours_bought": 0.5, "node_hours_wasted": 0.2}},
    )
    assert words == (
        "B would have made as many scale-ups (2, 0 false against 0), 0.5 node-hours, "
        "wasted 0.2 node-hours against 0"
    )
