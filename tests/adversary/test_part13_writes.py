"""A cycle's binds and status writes leave as soon as they are decided (scheduler.framework.writer
after 98baf5a), through the simulated cluster's HTTP API and a real SchedulerService: failures
stay per pod, in place and in order; a discarded gang writes nothing; a deposed leader's binds
stay home; observe mode writes nothing; a cycle that fails decided nothing."""

from __future__ import annotations

import threading
import time

from scheduler.api.report import TransitionKind
from scheduler.kube.bind_process import FENCE_GRACE_S
from simcluster.api.errors import ApiError
from tests.adversary.helpers import (
    cycle,
    get_pod,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    node_of,
    settle,
    start_service,
)

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


class Hook:
    """The simulated API server's fault hook (``ApiServer.faults``): ``before(method, path)``
    runs before each request is served and may raise an ``ApiError`` to refuse it."""

    def __init__(self, before) -> None:
        self.before = before
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def serve(self, method, path, query, answer, body=b""):
        with self.lock:
            self.requests.append((method, path))
        self.before(method, path)
        return answer()

    def writes(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(m, p) for m, p in self.requests if m in WRITES]


def _bind_path(name: str, ns: str = "default") -> str:
    return f"/api/v1/namespaces/{ns}/pods/{name}/binding"


def _condition(sim, name: str) -> dict:
    conditions = (get_pod(sim, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), {})


def test_a_refused_bind_is_reported_in_place_and_its_pod_says_why(sim):
    """Six pods; the API answers 500 to the third pod's binding. The report keeps the decided
    order with BIND_FAILED in place of that pod's ALLOCATED; the pod gets PodScheduled=False
    reason SchedulerError; the five others are bound."""
    make_node(sim, "n1", cpu="16")
    for i in range(6):
        make_pod(sim, f"p{i}", created=i)

    def before(method, path):
        if method == "POST" and path == _bind_path("p2"):
            raise ApiError(500, "Internal error occurred: etcd is on fire", reason="InternalError")

    hook = Hook(before)
    sim.server.faults = hook
    service = start_service(sim, bind_workers=1)  # the API sees the binds in the order decided
    try:
        report = cycle(sim, service)
    finally:
        service.stop()
    decided = [p.split("/")[-2] for m, p in hook.writes() if p.endswith("/binding")]
    assert sorted(decided) == [f"p{i}" for i in range(6)]
    kinds = [(t.name, t.kind) for t in report.transitions]
    assert kinds == [(name, TransitionKind.BIND_FAILED if name == "p2" else TransitionKind.ALLOCATED)
                     for name in decided]  # fmt: skip
    assert [e.split(":")[0] for e in report.errors] == ["bind default/p2 to n1"]
    assert [node_of(sim, f"p{i}") for i in range(6)] == ["n1", "n1", None, "n1", "n1", "n1"]
    condition = _condition(sim, "p2")
    assert (condition.get("status"), condition.get("reason")) == ("False", "SchedulerError")
    assert "etcd is on fire" in condition.get("message", "")


def test_a_gang_that_does_not_fit_sends_no_bind(sim):
    """minMember 3, room for 2: allocate places two members, then discards the statement; no
    Binding may reach the API, not even the ones placed before the discard."""
    make_queue(sim, "q")
    make_node(sim, "n1", cpu="2")
    make_podgroup(sim, "g", min_member=3, queue="q")
    for i in range(3):
        make_pod(sim, f"g{i}", group="g", queue="q", created=i)
    hook = Hook(lambda method, path: None)
    sim.server.faults = hook
    service = start_service(sim)
    try:
        cycle(sim, service)
        cycle(sim, service)
    finally:
        service.stop()
    assert [p for m, p in hook.writes() if p.endswith("/binding")] == []
    assert [node_of(sim, f"g{i}") for i in range(3)] == [None, None, None]


def _deposed_during_first_bind(sim, *, answer_after: float = 0.0, **service_kwargs):
    """One bind worker, four pods: the Lease is lost while the first Binding is being served
    (which takes ``answer_after`` seconds). The report, every write request (time, method,
    path) and when the Lease was lost."""
    make_node(sim, "n1", cpu="16")
    for i in range(4):
        make_pod(sim, f"p{i}", created=i)
    leading = threading.Event()
    leading.set()
    lost: list[float] = []
    timed: list[tuple[float, str, str]] = []

    def before(method, path):
        if method in WRITES:
            timed.append((time.monotonic(), method, path))
        if method == "POST" and path.endswith("/binding") and leading.is_set():
            leading.clear()  # deposed while this one is in flight
            lost.append(time.monotonic())
            time.sleep(answer_after)

    hook = Hook(before)
    sim.server.faults = hook
    service = start_service(sim, leading=leading.is_set, bind_workers=1, **service_kwargs)
    try:
        settle(sim, service)
        report = service.run_once()
        assert service.cache.wait_for_writes(5)
        time.sleep(0.3)
    finally:
        service.stop()
    return report, timed, lost[0]


def _one_bind_then_refusals(report, timed) -> None:
    bindings = [p for _, m, p in timed if p.endswith("/binding")]
    assert len(bindings) == 1
    first = bindings[0].split("/")[-2]
    kinds = [(t.name, t.kind) for t in report.transitions]
    assert kinds[0] == (first, TransitionKind.ALLOCATED)
    assert [k for _, k in kinds[1:]] == [TransitionKind.BIND_FAILED] * 3
    assert all("not the leader" in e for e in report.errors), report.errors
    # Nothing else was written after the loss either (conditions, events).
    assert [(m, p) for _, m, p in timed] == [("POST", bindings[0])]


def test_a_leader_deposed_after_its_first_bind_sends_no_other_from_its_own_process(sim):
    """Binds sent in the scheduler's process (``bind_process=False``): each asks the fence
    the moment it would leave, so nothing leaves after the loss."""
    report, timed, _ = _deposed_during_first_bind(sim, bind_process=False)
    _one_bind_then_refusals(report, timed)


def test_a_leader_deposed_during_a_slow_bind_sends_no_other_from_the_bind_process(sim):
    """The bind process (scheduler.kube.bind_process) refuses what it holds once the window it
    was given runs out: the first Binding takes longer than that window to be answered, so the
    three queued behind it are refused, reported failed, and nothing else is written."""
    report, timed, _ = _deposed_during_first_bind(sim, answer_after=3 * FENCE_GRACE_S)
    _one_bind_then_refusals(report, timed)


def test_binds_the_bind_process_holds_leave_at_most_its_window_after_the_loss(sim):
    """A fast server: what the bind process already held may still leave after the Lease was
    lost, but only within ``FENCE_GRACE_S`` (the documented window, well inside the gap
    between a leader's renew deadline and the lease's duration); each bind that did not leave
    is reported refused, each that left is bound, and no other write follows the loss."""
    report, timed, lost = _deposed_during_first_bind(sim)
    bindings = [(t, p.split("/")[-2]) for t, m, p in timed if p.endswith("/binding")]
    assert [m for _, m, _ in timed] == ["POST"] * len(bindings)  # binds only
    late = [t - lost for t, _ in bindings if t > lost]
    assert all(delay <= FENCE_GRACE_S + 0.05 for delay in late), late
    sent = {name for _, name in bindings}
    for transition in report.transitions:
        if transition.name in sent:
            assert transition.kind == TransitionKind.ALLOCATED
            assert node_of(sim, transition.name) == "n1"
        else:
            assert transition.kind == TransitionKind.BIND_FAILED
            assert "not the leader" in transition.message
            assert node_of(sim, transition.name) is None


def test_observe_mode_writes_nothing(sim):
    make_node(sim, "n1", cpu="16")
    make_queue(sim, "q")
    make_podgroup(sim, "g", min_member=2, queue="q")
    for i in range(2):
        make_pod(sim, f"g{i}", group="g", queue="q", created=i)
    make_pod(sim, "big", cpu="64")
    hook = Hook(lambda method, path: None)
    sim.server.faults = hook
    service = start_service(sim, act=False)
    try:
        for _ in range(2):
            report = cycle(sim, service)
    finally:
        service.stop()
    assert hook.writes() == []
    assert report.mode == "observe"
