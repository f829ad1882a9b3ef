"""Regression tests of what the simulation test found in the engine, each replayed through the
simulated cluster with the real scheduler (the e2e ``Harness``), no faults needed."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.api.report import PodState, TransitionKind
from simcluster.api.errors import ApiError
from simcluster.faults import FaultConfig, Faults
from simcluster.podutil import meta
from tests.e2e.harness import Harness, gates
from tests.e2e.harness import condition as condition_of
from tests.simtest.workload import gate_opted_in

NODE = {"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}


def harness(workload: list[dict], *, capability: str = "2") -> Harness:
    h = Harness(
        {
            "namespaces": [{"name": "sim"}],
            "queues": [{"name": "q", "spec": {"capability": {"cpu": capability}}}],
            "nodes": [NODE],
            "kubelet": {"startupDelay": 0},
            "workload": workload,
        }
    )
    for arrival in h.sim.scenario.arrivals if h.sim.scenario else []:
        gate_opted_in(arrival.pods)  # what the admission webhook does for an opted-in pod
    return h


def run_until(h: Harness, done: Callable[[], bool], seconds: int) -> None:
    for _ in range(seconds):
        h.step()
        if done():
            return


def bound(h: Harness, name: str) -> str:
    return (h.pod(name, "sim").get("spec") or {}).get("nodeName") or ""


def test_a_finished_pod_does_not_hold_its_queue_room():
    """Volcano's capacity plugin reserves a Running job's minResources (inqueue) only while the
    tasks holding node resources reach minMember (util.CalculateAllocatedTaskNum, AllocatedStatus):
    a job whose pod Succeeded holds nothing. Counting Succeeded pods there (ReadyTaskNum) left a
    finished pod's request reserved in its queue for as long as the pod object lasted, and a
    gated pod of that queue kept its gate though the queue was empty."""
    h = harness(
        [
            {"at": 0, "name": "done", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "2"}, "duration": 3},
            {"at": 5, "name": "next", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "1"}, "duration": 600, "gate": True},
        ]
    )  # fmt: skip
    try:
        run_until(h, lambda: bool(bound(h, "done")), 5)
        run_until(h, lambda: h.pod("done", "sim")["status"].get("phase") == "Succeeded", 10)
        assert h.pod("done", "sim")["status"]["phase"] == "Succeeded"  # kept, not deleted
        run_until(h, lambda: bool(bound(h, "next")), 10)
        assert gates(h.pod("next", "sim")) == []
        assert bound(h, "next") == "n1"
        queue = next(q for q in h.reports[-1].queues if q.name == "q")
        assert not queue.inqueue.get("cpu")
    finally:
        h.close()


def test_a_terminating_pod_without_a_podgroup_is_not_admitted_again():
    """A pod without a PodGroup is a job of one (admitted by its own request). Deleted while
    running, it is Releasing for its grace period: there is nothing left to admit. Enqueueing
    it again put its request in the queue's inqueue figure every cycle, and the gated pod
    waiting behind it was held QueueFull until the terminating pod was gone."""
    h = harness(
        [
            {"at": 0, "name": "leaving", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "2"}, "duration": 3600},
            {"at": 3, "name": "next", "namespace": "sim", "queue": "q",
             "requests": {"cpu": "2"}, "duration": 600, "gate": True},
        ]
    )  # fmt: skip
    try:
        run_until(h, lambda: h.pod("leaving", "sim")["status"].get("phase") == "Running", 5)
        h.cluster.delete("pods", "sim", "leaving", {})  # its owner deletes it: 30 s of grace
        h.step(2)
        assert meta(h.pod("leaving", "sim")).get("deletionTimestamp")  # still terminating
        waiting = {p.name: p for p in h.reports[-1].waiting}
        # The queue holds nothing but the terminating pod, which no longer counts: the gated
        # pod passes its queue and waits for the node, where "leaving" still runs (8 CPU
        # node: it fits beside it at once).
        run_until(h, lambda: bool(bound(h, "next")), 10)
        assert meta(h.pod("leaving", "sim")).get("deletionTimestamp")
        assert bound(h, "next") == "n1", waiting.get("next")
        queue = next(q for q in h.reports[-1].queues if q.name == "q")
        assert not queue.inqueue.get("cpu")
        assert all(p.state is not PodState.GATED for p in h.reports[-1].waiting)
    finally:
        h.close()


class RefusedBinds(Faults):
    """The API refuses the first ``times`` bindings of pod ``name`` with a 409 (an
    optimistic-concurrency clash, as kube-apiserver answers), and nothing else."""

    def __init__(self, h: Harness, name: str, times: int) -> None:
        super().__init__(FaultConfig(), h.cluster)
        self.path, self.left = f"POST /api/v1/namespaces/sim/pods/{name}/binding", times

    def _refuse(self, key: str, draw: str | None = None) -> None:
        if key == self.path and self.left > 0:
            self.left -= 1
            self.record("conflict", key)
            raise ApiError(409, "the object has been modified (injected)", reason="Conflict")


def test_a_pod_whose_bind_the_api_refused_says_why_it_still_waits():
    """Volcano's SchedulerCache.Bind writes PodScheduled=False reason SchedulerError ("failed
    to bind to node …") on a task whose bind failed, then resyncs it for the next cycle. Sluice
    recorded the failure in its report only: a pod whose binding was refused a few cycles
    running stayed Pending with no PodScheduled condition at all, saying nothing of why."""
    h = harness(
        [{"at": 0, "name": "p", "namespace": "sim", "queue": "q",
          "requests": {"cpu": "1"}, "duration": 600}]
    )  # fmt: skip
    refused = RefusedBinds(h, "p", times=2)
    h.server.faults = refused
    try:
        h.step()
        assert refused.left == 1 and not bound(h, "p")
        condition = condition_of(h.pod("p", "sim"))
        assert condition["status"] == "False" and condition["reason"] == "SchedulerError"
        assert condition["message"].startswith("failed to bind to node n1: ")
        failed = [t for t in h.reports[-1].transitions if t.kind is TransitionKind.BIND_FAILED]
        assert [t.name for t in failed] == ["p"]
        h.step()  # refused again: still says why
        assert refused.left == 0 and not bound(h, "p")
        assert condition_of(h.pod("p", "sim"))["reason"] == "SchedulerError"
        h.step()  # the API takes it
        assert bound(h, "p") == "n1"
        assert condition_of(h.pod("p", "sim"))["status"] == "True"
    finally:
        h.server.faults = None
        h.close()


def test_a_pipelined_pod_whose_queue_was_lowered_is_not_bound_past_it():
    """Volcano's allocate asks Allocatable(queue, task) of every task first, one nominated to a
    node included: a pod pipelined onto a node being freed, whose queue's capability is then
    lowered under it, waits for its queue instead of being bound past the new capability when
    the node frees. Sluice continued the persisted decision without asking the queue."""
    h = Harness(
        {
            "namespaces": [{"name": "sim"}],
            "queues": [{"name": "q", "spec": {"capability": {"cpu": "8"}}},
                       {"name": "other", "spec": {}}],
            "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}],
            "kubelet": {"startupDelay": 0},
            "workload": [
                {"at": 0, "name": "leaving", "namespace": "sim", "queue": "other",
                 "requests": {"cpu": "3"}, "duration": 3600},
                {"at": 4, "name": "next", "namespace": "sim", "queue": "q",
                 "requests": {"cpu": "2"}, "duration": 600},
            ],
        }
    )  # fmt: skip
    try:
        run_until(h, lambda: h.pod("leaving", "sim")["status"].get("phase") == "Running", 4)
        h.cluster.delete("pods", "sim", "leaving", {})  # 30 s of grace: n1 is being freed

        def names() -> set[str]:
            return {meta(p)["name"] for p in h.store.list("pods")[0]}

        def nominated() -> str:
            pod = h.pod("next", "sim") if "next" in names() else {}
            return (pod.get("status") or {}).get("nominatedNodeName") or ""

        run_until(h, lambda: bool(nominated()), 8)
        assert nominated() == "n1"  # pipelined there, waiting for "leaving" to go
        h.store.mutate("queues", "", "q", lambda q: q["spec"].update(capability={"cpu": "1"}))
        run_until(h, lambda: "leaving" not in names(), 40)
        h.step(2)
        assert "leaving" not in names()  # n1 is free
        assert not bound(h, "next")  # its queue admits 1 CPU of its 2
        assert not h.pod("next", "sim")["status"].get("nominatedNodeName")
        waiting = {p.name: p for p in h.reports[-1].waiting}
        assert waiting["next"].state is PodState.WAITING
        assert waiting["next"].status.code.value == "QueueFull"
    finally:
        h.close()


def test_a_pipelined_pod_holds_its_queue_once():
    """Sluice persists a pipeline decision across cycles and counts the pipelined task in its
    queue's allocated figure; its job's inqueue figure (Volcano's capacity plugin: an Inqueue
    job's minResources less what it has allocated) still counted it in full, so the pod held
    its queue twice and a gated pod that fitted beside it kept its gate (QueueFull). In
    Volcano a pipelined task is Pending again at the next session: counted once, in inqueue."""
    h = Harness(
        {
            "namespaces": [{"name": "sim"}],
            "queues": [{"name": "q", "spec": {"capability": {"cpu": "4"}}},
                       {"name": "other", "spec": {}}],
            "nodes": [{"name": "n1", "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}],
            "kubelet": {"startupDelay": 0},
            "workload": [
                {"at": 0, "name": "leaving", "namespace": "sim", "queue": "other",
                 "requests": {"cpu": "3"}, "duration": 3600},
                {"at": 4, "name": "piped", "namespace": "sim", "queue": "q",
                 "requests": {"cpu": "2"}, "duration": 600},
                {"at": 8, "name": "small", "namespace": "sim", "queue": "q",
                 "requests": {"cpu": "1"}, "duration": 600, "gate": True},
            ],
        }
    )  # fmt: skip
    for arrival in h.sim.scenario.arrivals if h.sim.scenario else []:
        gate_opted_in(arrival.pods)
    try:
        run_until(h, lambda: h.pod("leaving", "sim")["status"].get("phase") == "Running", 4)
        h.cluster.delete("pods", "sim", "leaving", {})  # 30 s of grace: n1 is being freed
        h.step(8)
        assert h.pod("piped", "sim")["status"].get("nominatedNodeName") == "n1"
        h.step(3)
        waiting = {p.name: p for p in h.reports[-1].waiting}
        assert waiting["piped"].state is PodState.PIPELINED
        # 2 CPU pipelined + 1 CPU of "small" <= 4: the queue has room for it
        assert gates(h.pod("small", "sim")) == [], waiting.get("small")
        queue = next(q for q in h.reports[-1].queues if q.name == "q")
        assert queue.allocated.get("cpu", 0) + queue.inqueue.get("cpu", 0) <= 4000
    finally:
        h.close()
