"""Each invariant of the simulation test is shown to catch its bug: a run on a small fixed
workload, faults and churn off, with the bug the invariant guards against injected after a
cycle, must report that invariant (and the same run without the bug reports nothing)."""

from __future__ import annotations

import pytest

from scheduler.api.labels import QUEUE_RESERVATION_ANNOTATION
from scheduler.api.report import PodState
from scheduler.kube.client import ApiError
from simcluster.api.errors import ApiError as SimApiError
from simcluster.faults import FaultConfig, Faults
from simcluster.podutil import meta
from tests.e2e.harness import Harness, condition
from tests.simtest import runner
from tests.simtest.invariants import UNGATED_WITHIN
from tests.simtest.runner import Result, run
from tests.simtest.workload import Workload

GATE = {"scheduling.volcano.sh/queue-allocation-gate": "true"}


def workload(autoscaler: str = "none") -> Workload:
    """Queue ``small`` (2 CPU) with four gated 1-CPU pods: two run, two wait for the queue;
    queue ``wide`` with a gang that runs, a gang that never fits a node, a pod too big for
    any node."""
    scenario = {
        "name": "catch",
        "namespaces": [{"name": "sim"}],
        "queues": [
            {"name": "small", "spec": {"capability": {"cpu": "2"}}},
            {"name": "wide", "spec": {}},
        ],
        "nodes": [
            {"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            {"name": "n2", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        ],
        "nodeGroups": [
            {"name": "pool", "min": 0, "max": 3, "provisionDelay": 5,
             "template": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        ],
        "workload": [
            {"at": 0, "name": "queued", "namespace": "sim", "replicas": 4, "queue": "small",
             "requests": {"cpu": "1"}, "duration": 3600, "annotations": GATE},
            {"at": 0, "name": "team", "namespace": "sim", "replicas": 2, "queue": "wide",
             "podGroup": {"minMember": 2}, "requests": {"cpu": "1"}, "duration": 3600},
            {"at": 0, "name": "wide-gang", "namespace": "sim", "replicas": 3, "queue": "wide",
             "podGroup": {"minMember": 3}, "requests": {"cpu": "7"}, "duration": 3600},
            {"at": 0, "name": "huge", "namespace": "sim", "queue": "wide",
             "requests": {"cpu": "100"}, "duration": 3600},
        ],
    }  # fmt: skip
    return Workload(0, scenario, autoscaler, gated=True, horizon=0)


def play(sabotage=None, *, cycles: int = 25, autoscaler: str = "none") -> Result:
    return run(
        0,
        cycles=cycles,
        faults=FaultConfig(),
        restarts=False,
        churn=False,
        sabotage=sabotage,
        workload=workload(autoscaler),
    )


def reported(result: Result) -> set[int]:
    return {found.violation.invariant for found in result.violations}


def pods(h: Harness, prefix: str) -> list[dict]:
    return sorted(
        (p for p in h.store.list("pods")[0] if meta(p)["name"].startswith(prefix)),
        key=lambda p: meta(p)["name"],
    )


def once(at: int, action):
    def sabotage(h: Harness, cycle: int) -> None:
        if cycle == at:
            action(h)

    return sabotage


def test_the_fixed_workload_runs_clean():
    result = play()
    assert result.violations == [], [f.describe() for f in result.violations]
    assert result.bound == 4  # two queued pods and the team gang


def test_invariant_1_catches_a_pod_bound_to_a_second_node():
    def rebind(h: Harness) -> None:
        pod = next(p for p in pods(h, "team") if p["spec"].get("nodeName"))
        other = "n2" if pod["spec"]["nodeName"] == "n1" else "n1"
        h.store.mutate("pods", "sim", meta(pod)["name"], lambda p: p["spec"].update(nodeName=other))

    result = play(once(10, rebind))
    assert 1 in reported(result)
    found = next(f for f in result.violations if f.violation.invariant == 1)
    assert "was bound to" in found.violation.message and found.cycle == 10
    assert "make simtest SEED=0" in found.describe()


def test_invariant_1_catches_a_node_over_its_allocatable():
    def overcommit(h: Harness) -> None:
        pod = next(p for p in pods(h, "wide-gang"))
        h.store.mutate("pods", "sim", meta(pod)["name"], lambda p: p["spec"].update(nodeName="n1"))

    assert 1 in reported(play(once(10, overcommit)))


def test_invariant_2_catches_a_queue_admitted_past_its_capability():
    def admit(h: Harness) -> None:  # a waiting pod of the full queue bound anyway
        pod = next(p for p in pods(h, "queued") if not p["spec"].get("nodeName"))
        h.core.patch_namespaced_pod(meta(pod)["name"], "sim", {"spec": {"schedulingGates": None}})
        h.store.mutate("pods", "sim", meta(pod)["name"], lambda p: p["spec"].update(nodeName="n2"))

    result = play(once(10, admit))
    assert 2 in reported(result)
    assert any("queue/small" in f.violation.objects for f in result.violations)


def test_invariant_3_catches_a_queue_wait_marked_unschedulable():
    def mark(h: Harness) -> None:
        waiting = [p for p in h.reports[-1].waiting if p.state is PodState.GATED]
        assert waiting, "the run should have queue waits"
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        h.store.mutate(
            "pods", "sim", waiting[0].name, lambda p: p["status"].update(conditions=[condition])
        )

    assert 3 in reported(play(once(10, mark)))


def test_invariant_3_catches_a_node_shortfall_never_said():
    def forget(h: Harness, cycle: int) -> None:  # the condition writer loses every write
        if cycle >= 3:
            h.store.mutate("pods", "sim", "huge", lambda p: p["status"].update(conditions=[]))

    assert 3 in reported(play(forget))


def test_invariant_4_catches_gates_never_removed():
    def jam_then_free(h: Harness, cycle: int) -> None:
        if cycle == 1:  # every gate removal is lost from now on

            def lost(pod, *args, **kwargs):
                raise ApiError(503, f"pod {pod}", "gate removal lost")

            h.service.cluster.remove_scheduling_gate = lost
            h.service.cluster.patch_pod = lost
        if cycle == 3:  # a running pod of the full queue ends: room for a gated one
            running = next(p for p in pods(h, "queued") if p["spec"].get("nodeName"))
            h.store.delete("pods", "sim", meta(running)["name"])

    result = play(jam_then_free, cycles=30)
    assert 4 in reported(result)
    found = next(f for f in result.violations if f.violation.invariant == 4)
    assert "queue/small" in found.violation.objects


def test_invariant_5_catches_a_stale_nomination():
    def nominate(h: Harness, cycle: int) -> None:
        if cycle >= 5:
            h.store.mutate(
                "pods", "sim", "huge", lambda p: p["status"].update(nominatedNodeName="n1")
            )

    result = play(nominate)
    assert 5 in reported(result)


def test_invariant_6_catches_half_a_gang_bound():
    def half(h: Harness) -> None:
        h.store.mutate("pods", "sim", "wide-gang-0", lambda p: p["spec"].update(nodeName="n2"))

    result = play(once(10, half))
    assert 6 in reported(result)
    assert any("podgroup/sim/wide-gang" in f.violation.objects for f in result.violations)


def test_invariant_7_catches_a_cycle_that_raises():
    def broken(h: Harness) -> None:
        def snapshot(now):
            raise RuntimeError("the cache is broken")

        h.service.cache.snapshot = snapshot

    result = play(once(10, broken))
    assert 7 in reported(result)
    assert any("the cycle raised" in f.violation.message for f in result.violations)


def test_invariant_7_catches_a_pending_pod_left_without_a_reason():
    def forget(h: Harness, cycle: int) -> None:  # its PodScheduled condition never written
        if cycle >= 5:
            h.store.mutate("pods", "sim", "huge", lambda p: p["status"].update(conditions=[]))

    result = play(forget)
    assert any(
        f.violation.invariant == 7 and "without a PodScheduled reason" in f.violation.message
        for f in result.violations
    )


def test_invariant_7_waits_for_the_retry_of_a_status_write_the_api_refused():
    """A refused status write is retried the next cycle: the cycles it was refused in do not
    count against the bound; the others do."""

    def forget(h: Harness, cycle: int) -> None:
        if cycle >= 5:
            h.store.mutate("pods", "sim", "huge", lambda p: p["status"].update(conditions=[]))
            faults = h.server.faults
            assert faults is not None
            if cycle < 20:  # as if the API had refused its status write every cycle
                faults.record("throttle", "PATCH /api/v1/namespaces/sim/pods/huge/status")

    result = run(0, cycles=25, faults=FaultConfig(), restarts=False,
                 churn=False, sabotage=forget, workload=workload())  # fmt: skip
    found = [f for f in result.violations if f.violation.invariant == 7]
    assert [f.cycle for f in found] == [22]  # cycles 20, 21, 22 without a refusal


@pytest.mark.parametrize("autoscaler", ["cluster-autoscaler", "karpenter"])
def test_invariant_8_catches_a_false_scale_up(autoscaler):
    def lie(h: Harness, cycle: int) -> None:  # queue waits look like node shortfalls
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}

        def ungated_unschedulable(pod: dict) -> None:
            pod["status"]["conditions"] = [condition]
            pod["spec"]["schedulingGates"] = []
            # as big as a node: only a new node could take it
            pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "8"}

        for pod in pods(h, "queued"):
            if not pod["spec"].get("nodeName"):
                h.store.mutate("pods", "sim", meta(pod)["name"], ungated_unschedulable)

    result = play(lie, cycles=40, autoscaler=autoscaler)
    assert 8 in reported(result)


def test_invariant_6_excuses_a_gang_whose_member_the_api_refused_to_bind(monkeypatch):
    """Binds are one API call per pod and Volcano takes none back: when the API refuses one
    member's bind, the others stay bound and the refused one waits for the next cycles (with
    PodScheduled reason SchedulerError). The gang is partial for as long as the refusals
    last; that is the API's doing, not a decision of the scheduler's that split the gang."""
    refused = "POST /api/v1/namespaces/sim/pods/team-1/binding"

    class RefusingFaults(Faults):
        def _refuse(self, key: str, draw: str | None = None) -> None:
            if key == refused:
                self.record("conflict", key)
                raise SimApiError(409, "the object has been modified (injected)", reason="Conflict")

    monkeypatch.setattr(runner, "Faults", RefusingFaults)
    seen: dict[str, dict] = {}

    def look(h: Harness, cycle: int) -> None:
        seen.update({meta(p)["name"]: p for p in pods(h, "team")})

    result = play(look, cycles=6)
    assert not seen["team-1"]["spec"].get("nodeName")  # refused every cycle
    assert seen["team-0"]["spec"]["nodeName"]  # the gang is partial
    assert condition(seen["team-1"])["reason"] == "SchedulerError"
    assert result.faults["conflict"] >= 6
    assert result.violations == [], [f.describe() for f in result.violations]


def test_invariant_2_catches_a_gate_removed_past_the_capability():
    """A pod of the full queue let through its gate — a reservation recorded on it, as the
    scheduler records one — holds room the queue does not have."""

    def let_through(h: Harness) -> None:
        pod = next(p for p in pods(h, "queued") if not p["spec"].get("nodeName"))

        def ungate(p: dict) -> None:
            p["spec"]["schedulingGates"] = []
            p["metadata"]["annotations"][QUEUE_RESERVATION_ANNOTATION] = "2023-11-14T22:13:30Z"

        h.store.mutate("pods", "sim", meta(pod)["name"], ungate)

    result = play(once(10, let_through))
    assert [f.violation.invariant for f in result.violations] == [2]
    assert "queue/small" in result.violations[0].violation.objects


def test_invariant_2_counts_no_reservation_its_queue_no_longer_holds():
    """A recorded reservation is held while its job still fits its queue
    (GateReservations.load): a gang of four that passed its queue, lost two members and then
    saw its queue's capability lowered under what its two left hold releases it, and the
    queue's room goes to a pod that fits. The stamp left on the gang's pods is not room taken."""
    scenario = {
        "name": "lowered",
        "namespaces": [{"name": "sim"}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "8"}}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "2", "memory": "32Gi", "pods": "110"}}],
        "workload": [
            {"at": 0, "name": "gang", "namespace": "sim", "replicas": 4, "queue": "q",
             "podGroup": {"minMember": 4}, "requests": {"cpu": "1"}, "duration": 3600,
             "annotations": GATE},
            {"at": 6, "name": "small", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "500m"}, "duration": 3600, "annotations": GATE},
        ],
    }  # fmt: skip
    seen: dict[str, dict] = {}

    def shrink(h: Harness, cycle: int) -> None:
        if cycle == 3:  # ungated with reservations, the gang fits no node (2 CPU): its owner
            # deletes two members
            assert all(meta(p)["annotations"].get(QUEUE_RESERVATION_ANNOTATION)
                       for p in pods(h, "gang"))  # fmt: skip
            h.cluster.delete("pods", "sim", "gang-1", {})
            h.cluster.delete("pods", "sim", "gang-2", {})
        if cycle == 4:  # 1 CPU: under the 2 CPU the two left hold
            h.store.mutate("queues", "", "q", lambda q: q["spec"].update(capability={"cpu": "1"}))
        seen.update({meta(p)["name"]: p for p in h.store.list("pods")[0]})

    result = run(
        0, cycles=10, faults=FaultConfig(), restarts=False, churn=False, sabotage=shrink,
        workload=Workload(0, scenario, "none", gated=True, horizon=0),
    )  # fmt: skip
    assert seen["small"]["spec"].get("nodeName") == "n1"  # the queue's 1 CPU took it
    assert QUEUE_RESERVATION_ANNOTATION in meta(seen["gang-0"])["annotations"]  # left there
    assert not seen["gang-0"]["spec"].get("nodeName")
    assert result.violations == [], [f.describe() for f in result.violations]


def test_invariant_8_excuses_a_scale_up_on_a_condition_the_queue_change_overtook(monkeypatch):
    """The cycle marks a pod Unschedulable while its queue has room; the workload then lowers
    the queue's capability under it, and the autoscaler's loop, running before the next cycle
    rewrites the condition, buys a node for it. The ledger calls it false (the queue no
    longer admits the pod); the scheduler's marking was right when it was written. A false
    scale-up on a queue nobody changed is still reported (test_invariant_8_catches_…)."""
    scenario = {
        "name": "overtaken",
        "namespaces": [{"name": "sim"}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "8"}}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "2", "memory": "32Gi", "pods": "110"}}],
        "nodeGroups": [
            {"name": "pool", "min": 0, "max": 3, "provisionDelay": 5,
             "template": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        ],
        "workload": [
            {"at": 0, "name": "wide", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "4"}, "duration": 3600, "annotations": GATE},
        ],
    }  # fmt: skip
    steps = iter(range(1, 1000))

    def lower_before_the_scan(h, rng, tracker, result) -> None:
        # Cluster Autoscaler scans every 10 s (t=0, t=10: step 11), and "wide" is marked
        # Unschedulable from cycle 1 on: lowered at step 11, after cycle 10 marked it
        if next(steps) == 11:
            h.store.mutate("queues", "", "q", lambda q: q["spec"].update(capability={"cpu": "1"}))
            tracker.queue_changed["q"] = h.clock.now()

    monkeypatch.setattr(runner, "_churn", lower_before_the_scan)
    ledgers = []
    result = run(
        0, cycles=14, faults=FaultConfig(), restarts=False,
        sabotage=lambda h, cycle: ledgers.append(h.sim.ledger),
        workload=Workload(0, scenario, "cluster-autoscaler", gated=True, horizon=0),
    )  # fmt: skip
    assert [r.false_scale_up for r in ledgers[-1].scale_ups] == [True]
    assert result.violations == [], [f.describe() for f in result.violations]


def test_invariant_4_counts_a_pod_let_through_as_holding_its_queue():
    """A pod let through its gate is an admitted job: its request counts in its queue's
    inqueue figure (Volcano's capacity plugin counts an Inqueue job's minResources) even once
    its reservation is released because the queue's capability was lowered under it. A gated
    pod behind it waits for the queue (QueueFull), as in Volcano: that is not room left
    unused."""
    scenario = {
        "name": "admitted",
        "namespaces": [{"name": "sim"}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "4"}}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "2", "memory": "32Gi", "pods": "110"}}],
        "workload": [
            {"at": 0, "name": "big", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "3"}, "duration": 3600, "annotations": GATE},
            {"at": 5, "name": "small", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "1"}, "duration": 3600, "annotations": GATE},
        ],
    }  # fmt: skip
    waits: list[str] = []

    def lower(h: Harness, cycle: int) -> None:
        if cycle == 3:  # big passed its queue (4 CPU) and fits no node (2 CPU): admitted
            h.store.mutate("queues", "", "q", lambda q: q["spec"].update(capability={"cpu": "2"}))
        waits.extend(p.status.code.value for p in h.reports[-1].waiting if p.name == "small")

    result = run(
        0, cycles=UNGATED_WITHIN + 10, faults=FaultConfig(), restarts=False, churn=False,
        sabotage=lower, workload=Workload(0, scenario, "none", gated=True, horizon=0),
    )  # fmt: skip
    assert len(waits) > UNGATED_WITHIN and set(waits) == {"QueueFull"}
    assert result.violations == [], [f.describe() for f in result.violations]
