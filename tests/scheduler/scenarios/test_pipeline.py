"""Volcano's pipeline cache persistence design (issue #5044): each row of its "Current vs Proposed Comparison"
table and each of Problems 1-5, on the engine with a recording cluster client.

The common picture: node n1 (4 CPU) runs a 1-CPU pod and a 3-CPU pod that is terminating
(Releasing); a 3-CPU pod arrives. Nothing is idle, but 3 CPU are being released, so the new
pod is pipelined onto n1.
"""

from __future__ import annotations

import copy

import pytest

from scheduler.api.report import PodState, TransitionKind
from scheduler.api.task_info import TaskStatus
from scheduler.cache import SchedulerCache
from scheduler.config import SchedulerConfig, default_config
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.writer import Writer
from scheduler.loop import run_cycle
from tests.builders import node, pod
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario

CPU = "cpu"


def releasing(name: str, cpu: str, node_name: str) -> dict:
    return pod(name, cpu, node_name=node_name, deletion="2024-01-01T00:05:00Z")


def picture(*extra_nodes) -> SchedulerCache:
    return Scenario(
        nodes=[node("n1", cpu="4"), *extra_nodes],
        pods=[
            pod("steady", "1", node_name="n1"),
            releasing("leaving", "3", "n1"),
            pod("waiter", "3", created=5),
        ],
    ).cache()


def cycle(cache: SchedulerCache, client: RecordingClusterClient, config=None, now=0.0):
    return run_cycle(cache, config or default_config(), client, now=now)


def cached_task(cache: SchedulerCache, name: str):
    snap = cache.snapshot()
    return next(t for j in snap.jobs.values() for t in j.tasks.values() if t.name == name), snap


def pipelined_events(client: RecordingClusterClient) -> list[tuple]:
    return [c for c in client.of("record_event") if c[3] == "Pipelined"]


# --- the comparison table ----------------------------------------------------------------


def test_cache_task_becomes_pipelined_and_node_reserves_its_resources():
    cache, client = picture(), RecordingClusterClient()
    report = cycle(cache, client)
    assert [(t.name, t.kind, t.node) for t in report.transitions] == [
        ("waiter", TransitionKind.PIPELINED, "n1")
    ]
    task, snap = cached_task(cache, "waiter")
    assert task.status == TaskStatus.PIPELINED and task.node_name == "n1"
    n1 = snap.nodes["n1"]
    assert n1.pipelined.get(CPU) == 3000 and "uid-ns-waiter" in n1.tasks
    assert n1.future_idle.get(CPU) == 0  # idle 0 + releasing 3 - pipelined 3


def test_next_cycle_sees_the_decision_on_the_same_node_and_does_not_repeat_it():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    second = cycle(cache, client, now=1.0)
    assert second.transitions == []
    assert client.of("patch_nominated_node") == [("patch_nominated_node", "ns/waiter", "n1")]
    assert len(pipelined_events(client)) == 1


def test_nominated_node_name_is_set_only_by_the_cache_pipeline_path():
    config = SchedulerConfig.from_dict({**default_config().to_dict(), "pipelinePersistence": False})
    cache, client = picture(), RecordingClusterClient()
    report = cycle(cache, client, config)
    # Persistence off (Volcano before issue #5044's fix): the session pipelined it, nothing persisted,
    # and the session-end status path does not set nominatedNodeName either.
    assert report.transitions == []
    assert client.of("patch_nominated_node") == []
    task, _ = cached_task(cache, "waiter")
    assert task.status == TaskStatus.PENDING
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    assert client.of("patch_nominated_node") == [("patch_nominated_node", "ns/waiter", "n1")]


def test_pipelined_pod_gets_the_unschedulable_condition_at_session_end():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    condition = [c[2] for c in client.of("patch_pod_condition") if c[1] == "ns/waiter"][-1]
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "Pod ns/waiter can possibly be assigned to n1, once resource is released"
    )


def test_no_duplicate_pipeline_event_over_consecutive_cycles():
    cache, client = picture(), RecordingClusterClient()
    for second in range(5):
        cycle(cache, client, now=float(second))
    assert len(pipelined_events(client)) == 1
    assert len(client.of("patch_nominated_node")) == 1


def test_statement_does_not_pipeline_a_task_again_onto_its_node():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    ssn = Session(cache.snapshot(), default_config(), Writer(cache, client), now=1)
    ssn.open()
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "waiter")
    stmt = Statement(ssn)
    stmt.pipeline(task, ssn.nodes["n1"])
    assert stmt.operations == []
    assert ssn.nodes["n1"].pipelined.get(CPU) == 3000  # not reserved twice


def test_watch_echo_of_our_own_patch_does_not_reset_the_task_to_pending():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    task, _ = cached_task(cache, "waiter")
    echo = copy.deepcopy(task.pod)
    echo["status"]["nominatedNodeName"] = "n1"
    stale = copy.deepcopy(task.pod)  # an update that happened before the patch
    stale["status"].pop("nominatedNodeName", None)
    for update in (echo, stale):
        cache.update_pod(update)
        task, snap = cached_task(cache, "waiter")
        assert task.status == TaskStatus.PIPELINED and task.node_name == "n1"
        assert snap.nodes["n1"].pipelined.get(CPU) == 3000


def test_failed_cache_pipeline_is_undone_in_the_session():
    scenario = Scenario(
        nodes=[node("n1", cpu="4")],
        pods=[pod("steady", "1", node_name="n1"), releasing("leaving", "3", "n1"),
              pod("waiter", "3", created=5)],
    )  # fmt: skip
    cache, client = scenario.cache(), RecordingClusterClient()
    ssn = Session(cache.snapshot(), default_config(), Writer(cache, client), now=0)
    ssn.open()
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "waiter")
    cache.delete_pod(task.pod)  # the pod went away while the cycle ran
    stmt = Statement(ssn)
    stmt.pipeline(task, ssn.nodes["n1"])
    stmt.commit()
    assert task.status == TaskStatus.PENDING and task.node_name == ""
    assert ssn.nodes["n1"].pipelined.get(CPU) == 0
    assert client.of("patch_nominated_node") == []
    assert "not in the scheduler cache" in ssn.writer.errors[0]


# --- problems 1-5 ------------------------------------------------------------------------


def test_problem_1_pipelined_task_is_allocated_in_place_once_resources_free():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    cache.delete_pod(releasing("leaving", "3", "n1"))  # the terminating pod is gone
    report = cycle(cache, client, now=1.0)
    assert client.binds() == {"ns/waiter": "n1"}
    assert [(t.name, t.kind, t.from_state) for t in report.transitions] == [
        ("waiter", TransitionKind.ALLOCATED, PodState.PIPELINED)
    ]
    task, snap = cached_task(cache, "waiter")
    assert task.status == TaskStatus.BINDING  # problem 5: Pipelined -> Binding in the cache
    n1 = snap.nodes["n1"]
    assert n1.pipelined.get(CPU) == 0 and n1.used.get(CPU) == 4000 and n1.idle.get(CPU) == 0


def test_problem_1_statement_allocate_moves_accounting_from_pipelined_to_used():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    ssn = Session(cache.snapshot(), default_config(), Writer(cache, client), now=1)
    ssn.open()
    n1 = ssn.nodes["n1"]
    task = n1.tasks["uid-ns-waiter"]
    Statement(ssn).allocate(task, n1)
    assert task.status == TaskStatus.ALLOCATED
    assert n1.pipelined.get(CPU) == 0 and n1.used.get(CPU) == 7000  # 1 + 3 releasing + 3


def test_problem_2_stale_reservation_is_released_and_the_task_moves_on():
    cache, client = picture(node("n2", cpu="2")), RecordingClusterClient()
    cycle(cache, client)
    # Someone else's pod landed on n1: even after "leaving" ends, 3 CPU will never be free.
    cache.delete_pod(releasing("leaving", "3", "n1"))
    cache.add_pod(pod("intruder", "3", node_name="n1", scheduler="default-scheduler"))
    report = cycle(cache, client, now=1.0)
    assert TransitionKind.UNPIPELINED in [t.kind for t in report.transitions]
    assert client.of("patch_nominated_node")[-1] == ("patch_nominated_node", "ns/waiter", None)
    task, snap = cached_task(cache, "waiter")
    assert task.status == TaskStatus.PENDING and task.node_name == ""
    assert snap.nodes["n1"].pipelined.get(CPU) == 0


def test_problem_2_own_reservation_is_not_added_back_to_future_idle():
    # While "leaving" still terminates, n1's future idle is 0 with the waiter's own
    # reservation counted: the fast path fails, the task is unpipelined and found again on
    # the same node by the normal scan. The persisted decision does not change.
    cache, client = picture(node("n2", cpu="8")), RecordingClusterClient()
    cache.add_pod(pod("filler", "8", node_name="n2"))
    cycle(cache, client)
    report = cycle(cache, client, now=1.0)
    assert report.transitions == []
    task, _ = cached_task(cache, "waiter")
    assert task.status == TaskStatus.PIPELINED and task.node_name == "n1"
    assert len(client.of("patch_nominated_node")) == 1


def test_problem_3_nomination_is_known_before_the_watch_brings_it_back():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    task, _ = cached_task(cache, "waiter")
    assert "nominatedNodeName" not in task.pod["status"]  # the patch was never echoed
    assert task.nominated_node_name == "n1"
    assert task.clone().nominated_node_name == "n1"


def test_problem_4_a_fresh_cache_rebuilds_pipelined_state_from_the_pod():
    waiter = pod("waiter", "3", created=5, nominated="n1")
    cache = Scenario(
        nodes=[node("n1", cpu="4")],
        pods=[pod("steady", "1", node_name="n1"), releasing("leaving", "3", "n1"), waiter],
    ).cache()
    task, snap = cached_task(cache, "waiter")
    assert task.status == TaskStatus.PIPELINED and task.node_name == "n1"
    assert snap.nodes["n1"].pipelined.get(CPU) == 3000
    client = RecordingClusterClient()
    report = cycle(cache, client)
    assert report.transitions == [] and client.of("patch_nominated_node") == []


def test_problem_5_bind_of_a_pipelined_task_in_the_cache():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    task, _ = cached_task(cache, "waiter")
    cache.bind(task, "n1", client)
    task, snap = cached_task(cache, "waiter")
    assert task.status == TaskStatus.BINDING
    assert snap.nodes["n1"].pipelined.get(CPU) == 0
    assert snap.nodes["n1"].used.get(CPU) == 7000


# --- allocate: three ways out, pipelined first ------------------------------------------


def test_gang_neither_ready_nor_pipelined_is_discarded_without_phantom_reservations():
    from tests.builders import podgroup

    cache = Scenario(
        nodes=[node("n1", cpu="4")],
        pods=[pod("steady", "1", node_name="n1"), releasing("leaving", "2", "n1"),
              *(pod(f"g{i}", "2", group="g", created=5) for i in range(3))],
        podgroups=[podgroup("g", 3, phase="Inqueue")],
    ).cache()  # fmt: skip
    client = RecordingClusterClient()
    report = cycle(cache, client)
    assert report.transitions == [] and client.of("patch_nominated_node") == []
    _, snap = cached_task(cache, "g0")
    assert snap.nodes["n1"].pipelined.get(CPU) == 0


def test_pipelined_job_keeps_its_node_against_a_higher_priority_arrival():
    cache, client = picture(), RecordingClusterClient()
    cycle(cache, client)
    cache.add_pod(pod("vip", "3", priority=1000, created=9))
    cache.delete_pod(releasing("leaving", "3", "n1"))
    cycle(cache, client, now=1.0)
    assert client.binds() == {"ns/waiter": "n1"}


@pytest.mark.parametrize("persist", [True, False])
def test_persistence_switch_round_trips_through_the_configuration(persist):
    raw = {**default_config().to_dict(), "pipelinePersistence": persist}
    assert SchedulerConfig.from_dict(raw).pipeline_persistence is persist
    with pytest.raises(ValueError, match="pipelinePersistence"):
        SchedulerConfig.from_dict({**raw, "pipelinePersistence": "yes"})
