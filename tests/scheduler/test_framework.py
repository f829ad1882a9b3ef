"""Statement commit/discard, configuration, tie-breaks."""

import pytest

from scheduler import registry
from scheduler.api.task_info import TaskStatus
from scheduler.cache import RecordingClusterClient
from scheduler.config import ConfigError, SchedulerConfig, default_config
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.writer import Writer
from tests.scheduler.uthelper import Scenario, node, pod


def open_session(scenario: Scenario):
    cache = scenario.cache()
    client = RecordingClusterClient()
    ssn = Session(cache.snapshot(), default_config(), Writer(cache, client), now=0)
    ssn.open()
    return ssn, client


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


def test_ties_break_on_creation_time_then_uid():
    ssn, _ = open_session(Scenario(pods=[pod("b", created=1), pod("a", created=1), pod("z")]))
    ordered = sorted(ssn.jobs.values(), key=ssn.job_order_key)
    assert [j.name for j in ordered] == ["z", "a", "b"]


def test_config_parses_volcano_shape_and_rejects_unknown_names():
    config = SchedulerConfig.from_yaml(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
        "  - name: nodeorder\n    arguments: {leastrequested.weight: 2}\n"
    )
    assert config.actions == ("enqueue", "allocate")
    assert config.tiers[0][1].arguments == {"leastrequested.weight": 2}
    assert SchedulerConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="unknown action 'shuffle'"):
        registry.check(SchedulerConfig.from_dict({"actions": "shuffle", "tiers": []}))
    with pytest.raises(ConfigError, match="unknown plugin 'nosuch'"):
        registry.check(
            SchedulerConfig.from_dict(
                {"actions": "allocate", "tiers": [{"plugins": [{"name": "nosuch"}]}]}
            )
        )


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
