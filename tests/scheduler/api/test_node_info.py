"""scheduler.api.node_info: a node's figures as tasks come and go."""

from scheduler.api.node_info import NodeInfo
from scheduler.api.task_info import TaskInfo, TaskStatus
from tests.builders import node, pod


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
