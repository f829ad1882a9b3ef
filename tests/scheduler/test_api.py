"""scheduler.api: statuses, requests, node figures, queue fields, helpers, input errors."""

import pytest

from scheduler.api.helpers import (
    InputError,
    has_only_volcano_scheduling_gate,
    has_queue_allocation_gate_annotation,
)
from scheduler.api.node_info import NodeInfo
from scheduler.api.quantity import QuantityError
from scheduler.api.queue_info import QueueInfo
from scheduler.api.resource import Resource, exceeded_part, share
from scheduler.api.task_info import TaskInfo, TaskStatus, allocated_status
from tests.scheduler.uthelper import GATE, node, pod, queue


def test_ten_statuses_and_allocated_status():
    assert len(TaskStatus) == 10
    allocated = {s for s in TaskStatus if allocated_status(s)}
    assert allocated == {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
                         TaskStatus.RUNNING}  # fmt: skip


@pytest.mark.parametrize(
    ("phase", "node_name", "deleting", "expected"),
    [
        ("Pending", None, False, TaskStatus.PENDING),
        ("Pending", "n1", False, TaskStatus.BOUND),
        ("Running", "n1", False, TaskStatus.RUNNING),
        ("Running", "n1", True, TaskStatus.RELEASING),
        ("Pending", None, True, TaskStatus.RELEASING),
        ("Succeeded", "n1", False, TaskStatus.SUCCEEDED),
        ("Failed", "n1", False, TaskStatus.FAILED),
        ("Weird", None, False, TaskStatus.UNKNOWN),
    ],
)
def test_pod_status_mapping(phase, node_name, deleting, expected):
    p = pod("p", node_name=node_name, phase=phase)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert TaskInfo(p).status == expected


def test_requests_sum_containers_and_init_containers_take_the_max():
    p = pod("p", "500m", "1Gi")
    p["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "1.5"}}})
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    task = TaskInfo(p)
    assert task.resreq == Resource({"cpu": 2000, "memory": 2**30})
    assert task.init_resreq == Resource({"cpu": 3000, "memory": 2**30})
    assert task.transaction.status == TaskStatus.PENDING and task.last_transaction is None


def test_bad_quantity_names_the_pod_and_the_field():
    with pytest.raises(
        QuantityError, match=r"pod ns/p: spec.containers\[0\].resources.requests.cpu"
    ):
        TaskInfo(pod("p", cpu="lots"))


def test_bad_node_selector_names_the_field():
    with pytest.raises(ValueError, match="spec.nodeSelector"):
        TaskInfo(pod("p", selector=["not", "a", "map"]))


def test_bad_min_member_names_the_podgroup():
    from scheduler.api.job_info import JobInfo
    from tests.scheduler.uthelper import podgroup

    bad = podgroup("g")
    bad["spec"]["minMember"] = "three"
    with pytest.raises(InputError, match="podgroup ns/g: spec.minMember"):
        JobInfo.from_podgroup(bad, {})


def test_node_future_idle_is_idle_plus_releasing_minus_pipelined():
    info = NodeInfo(node("n", cpu="8"))
    running = TaskInfo(pod("r", "2", node_name="n"))
    releasing = TaskInfo(pod("x", "3", node_name="n"))
    releasing.status = TaskStatus.RELEASING
    pipelined = TaskInfo(pod("y", "1"))
    pipelined.status = TaskStatus.PIPELINED
    for t in (running, releasing, pipelined):
        info.add_task(t)
    assert info.idle.get("cpu") == 3000
    assert info.used.get("cpu") == 5000
    assert info.releasing.get("cpu") == 3000
    assert info.pipelined.get("cpu") == 1000
    assert info.future_idle.get("cpu") == 5000
    info.remove_task(releasing)
    assert info.idle.get("cpu") == 6000 and info.releasing.get("cpu") == 0


def test_queue_fields_and_unlimited_capability():
    q = QueueInfo(queue("q", capability={"cpu": "-1", "memory": "4Gi"}, guarantee={"cpu": "1"},
                        parent="dept", priority=5))  # fmt: skip
    assert q.capability == Resource({"memory": 4 * 2**30})
    assert q.guarantee == Resource({"cpu": 1000})
    assert (q.parent, q.priority, q.is_open()) == ("dept", 5, True)
    assert QueueInfo(queue("top")).parent == "root"


def test_gate_helpers():
    ours = pod("a", gates=[GATE], opt_in=True)
    both = pod("b", gates=[GATE, "x/y"], opt_in=True)
    assert has_queue_allocation_gate_annotation(ours) and has_only_volcano_scheduling_gate(ours)
    assert not has_only_volcano_scheduling_gate(both)
    assert not has_queue_allocation_gate_annotation(pod("c"))
    assert TaskInfo(both).sch_gated and not TaskInfo(pod("c")).sch_gated


def test_resource_arithmetic():
    a, b = Resource({"cpu": 3000, "memory": 10}), Resource({"cpu": 1000, "memory": 20})
    assert exceeded_part(a, b) == Resource({"cpu": 2000})
    assert a.clone().sub(b) == Resource({"cpu": 2000})
    assert b.less_equal(a, ["cpu"]) and not b.less_equal(a)
    assert share(Resource({"cpu": 500}), Resource({"cpu": 1000, "memory": 10})) == 0.5


def test_an_overcommitted_node_offers_only_what_is_really_left_when_a_pod_leaves():
    # Another scheduler put 3 + 3 CPU on a 4-CPU node; when one pod leaves, 1 CPU is free, not 3.
    info = NodeInfo(node("n", cpu="4"))
    a, b = TaskInfo(pod("a", "3", node_name="n")), TaskInfo(pod("b", "3", node_name="n"))
    info.add_task(a)
    info.add_task(b)
    assert info.idle.get("cpu") == 0 and info.used.get("cpu") == 6000
    assert info.idle.get("memory") == 6 * 2**30  # memory is not overcommitted: 2 GiB used
    info.remove_task(a)
    assert info.idle.get("cpu") == 1000 and info.used.get("cpu") == 3000
    info.remove_task(b)
    assert info.idle.get("cpu") == 4000 and info.used.is_empty()
