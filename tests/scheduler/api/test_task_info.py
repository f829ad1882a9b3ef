"""scheduler.api.task_info: statuses, requests, input errors."""

import pytest

from scheduler.api.quantity import QuantityError
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskInfo, TaskStatus, allocated_status
from tests.builders import pod


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
    deletion = "2024-01-01T00:00:00Z" if deleting else None
    p = pod("p", node_name=node_name, phase=phase, deletion=deletion)
    assert TaskInfo(p).status == expected


def test_the_request_is_the_effective_one_init_containers_included():
    p = pod(
        "p",
        "500m",
        "1Gi",
        containers=[{"name": "b", "resources": {"requests": {"cpu": "1.5"}}}],
        init_containers=[{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
    )
    task = TaskInfo(p)
    # Kubernetes' PodRequests: max(3 CPU init, 0.5 + 1.5 CPU app). Volcano accounts nodes and
    # queues with the app containers alone (2 CPU), so it binds pods a kubelet rejects.
    assert task.resreq == Resource({"cpu": 3000, "memory": 2**30})
    assert task.init_resreq == task.resreq
    assert task.transaction.status == TaskStatus.PENDING and task.last_transaction is None


def test_bad_quantity_names_the_pod_and_the_field():
    with pytest.raises(
        QuantityError, match=r"pod ns/p: spec.containers\[0\].resources.requests.cpu"
    ):
        TaskInfo(pod("p", cpu="lots"))


def test_bad_node_selector_names_the_field():
    with pytest.raises(ValueError, match="spec.nodeSelector"):
        TaskInfo(pod("p", selector=["not", "a", "map"]))
