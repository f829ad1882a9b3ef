"""scheduler.framework.statement: commit and discard."""

from scheduler.api.task_info import TaskStatus
from scheduler.framework.statement import Statement
from tests.builders import node, pod
from tests.scheduler.uthelper import Scenario, open_session


def test_discard_undoes_in_reverse_and_keeps_last_transaction():
    ssn, client = open_session(Scenario(nodes=[node("n1")], pods=[pod("a"), pod("b", created=1)]))
    tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.name)
    n1 = ssn.nodes["n1"]
    stmt = Statement(ssn)
    stmt.allocate(tasks[0], n1)
    stmt.pipeline(tasks[1], n1)
    assert n1.idle.get("cpu") == 3000 and n1.pipelined.get("cpu") == 1000
    assert ssn.matrix.idle[0, ssn.matrix.dim_index["cpu"]] == 3000
    stmt.discard()
    assert n1.idle.get("cpu") == 4000 and n1.pipelined.get("cpu") == 0
    assert ssn.matrix.future[0, ssn.matrix.dim_index["cpu"]] == 4000
    assert [t.status for t in tasks] == [TaskStatus.PENDING, TaskStatus.PENDING]
    assert tasks[1].last_transaction.nominated_node_name == "n1"
    assert tasks[0].last_transaction.status == TaskStatus.ALLOCATED
    assert client.calls == []


def test_commit_binds_allocations_and_nominates_pipelines():
    ssn, client = open_session(Scenario(nodes=[node("n1")], pods=[pod("a"), pod("b", created=1)]))
    tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.name)
    stmt = Statement(ssn)
    stmt.allocate(tasks[0], ssn.nodes["n1"])
    stmt.pipeline(tasks[1], ssn.nodes["n1"])
    stmt.commit()
    assert client.calls == [
        ("bind", "ns/a", "n1"),
        ("patch_nominated_node", "ns/b", "n1"),
        ("record_event", "ns/b", "Normal", "Pipelined",
         "pod ns/b pipelined to node n1, waiting for resources to be released"),
    ]  # fmt: skip


def test_evict_then_discard_restores_the_running_task():
    ssn, _ = open_session(Scenario(nodes=[node("n1")], pods=[pod("a", node_name="n1")]))
    task = next(iter(ssn.jobs.values())).tasks["uid-ns-a"]
    stmt = Statement(ssn)
    stmt.evict(task, "test")
    assert task.status == TaskStatus.RELEASING and ssn.nodes["n1"].releasing.get("cpu") == 1000
    stmt.discard()
    assert task.status == TaskStatus.RUNNING and ssn.nodes["n1"].releasing.get("cpu") == 0


def test_discard_undoes_newest_first():
    ssn, _ = open_session(Scenario(nodes=[node("n1")], pods=[pod("a"), pod("b", created=1)]))
    tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.name)
    undone = []
    original = ssn.unplace_task
    ssn.unplace_task = lambda task, node_name: (undone.append(task.name), original(task, node_name))
    stmt = Statement(ssn)
    stmt.allocate(tasks[0], ssn.nodes["n1"])
    stmt.allocate(tasks[1], ssn.nodes["n1"])
    stmt.discard()
    assert undone == ["b", "a"]
