"""A cycle that raises after allocate committed: ``CycleReport.failed`` says it "decided
nothing", but since 98baf5a its binds left when their statements committed, and nobody awaits
them (scheduler.framework.writer ``Writer._send``; ``flush`` never runs). Through the simulated
cluster's HTTP API and a real SchedulerService; the failure is injected in the status step
that follows the actions (any exception after the first commit does the same)."""

from __future__ import annotations

import time

from scheduler.api.report import TransitionKind
from tests.adversary.helpers import cycle, make_node, make_pod, node_of, settle, start_service
from tests.adversary.test_part13_writes import Hook, _bind_path
from tests.conftest import wait_until


def _fail_the_first_status_step(monkeypatch) -> None:
    """The first cycle's job-status step raises (after its binds left); later ones run."""
    import scheduler.loop as loop

    real = loop.record_job_status
    calls = []

    def failing_once(ssn):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected: the status step fails")
        return real(ssn)

    monkeypatch.setattr(loop, "record_job_status", failing_once)


def test_a_cycle_that_fails_after_allocate_decided_nothing(sim, monkeypatch):
    """``CycleReport.failed``: "the report of a cycle that raised: it decided nothing". A cycle
    raises after allocate committed its binds (here the status step fails); either nothing
    of it reached the cluster, or what did is in a report: no pod may end up bound by the
    scheduler without any cycle's report saying so."""
    make_node(sim, "n1", cpu="16")
    for i in range(4):
        make_pod(sim, f"p{i}", created=i)
    _fail_the_first_status_step(monkeypatch)
    service = start_service(sim)
    try:
        first = cycle(sim, service)
        second = cycle(sim, service)
    finally:
        service.stop()
    assert first.failure and "injected" in first.failure
    reported = {
        t.name
        for report in (first, second)
        for t in report.transitions
        if t.kind is TransitionKind.ALLOCATED
    }
    bound = {f"p{i}" for i in range(4) if node_of(sim, f"p{i}")}
    assert bound == {f"p{i}" for i in range(4)}
    assert bound <= reported, f"bound but never reported: {sorted(bound - reported)}"


def test_a_failed_cycle_does_not_leave_binds_in_flight_for_the_next_to_duplicate(sim, monkeypatch):
    """The binds a failed cycle sent are still in flight (a slow API) when the next cycle
    starts: the next one must not decide them again (a second Binding per pod, 409 and a
    BIND_FAILED for a pod that is in fact bound)."""
    make_node(sim, "n1", cpu="16")
    for i in range(4):
        make_pod(sim, f"p{i}", created=i)

    def before(method, path):
        if method == "POST" and path.endswith("/binding"):
            time.sleep(0.4)

    hook = Hook(before)
    sim.server.faults = hook
    _fail_the_first_status_step(monkeypatch)
    service = start_service(sim, bind_workers=2)
    try:
        settle(sim, service)
        first = service.run_once()
        second = service.run_once()  # the next period's cycle, binds of the first in flight
        wait_until(lambda: all(node_of(sim, f"p{i}") for i in range(4)), timeout=10)
        assert service.cache.wait_for_writes(5)
    finally:
        service.stop()
    assert first.failure
    bindings = [p for m, p in hook.writes() if p.endswith("/binding")]
    refused = [t.name for t in second.transitions if t.kind is TransitionKind.BIND_FAILED]
    assert refused == [], f"the next cycle bound again pods already bound: {refused}"
    assert sorted(bindings) == sorted(_bind_path(f"p{i}") for i in range(4)), bindings


def test_a_failed_cycle_with_a_bind_in_flight_does_not_let_the_next_overcommit_the_node(
    sim, monkeypatch
):
    """One node with room for one pod. Cycle 1 binds ``p0`` there (the API slow to answer),
    then fails. A more urgent pod arrives; cycle 2 runs while p0's Binding is still in flight.
    The node must never end up with both pods bound on it."""
    from tests.adversary.helpers import scheduling

    scheduling(sim).create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    make_node(sim, "n1", cpu="1")
    make_pod(sim, "p0")

    def before(method, path):
        if method == "POST" and path.endswith("/binding"):
            time.sleep(1.0)

    sim.server.faults = Hook(before)
    _fail_the_first_status_step(monkeypatch)
    service = start_service(sim, bind_workers=2)
    try:
        settle(sim, service)
        first = service.run_once()
        make_pod(sim, "urgent", priority_class="high")
        settle(sim, service)
        service.run_once()
        wait_until(lambda: node_of(sim, "p0") or node_of(sim, "urgent"), timeout=10)
        time.sleep(1.5)  # every Binding answered
        assert service.cache.wait_for_writes(5)
    finally:
        service.stop()
    assert first.failure
    on_n1 = [name for name in ("p0", "urgent") if node_of(sim, name) == "n1"]
    assert len(on_n1) <= 1, f"node n1 (1 cpu) holds {on_n1}, 1 cpu each"
