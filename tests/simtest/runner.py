"""Deterministic simulation test: the real scheduler (``SchedulerService``, the worker's entry
point) against the simulated cluster on virtual time, with a seeded workload, seeded churn,
seeded faults (``simcluster.faults``) and scheduler restarts and failovers, every invariant of
``tests.simtest.invariants`` checked after every cycle.

``run(seed)`` plays one seed and returns what happened; a violation names the seed, the cycle,
the invariant, the objects involved and the command that replays it.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.api.labels import GROUP_NAME_ANNOTATION
from scheduler.api.report import CycleReport
from scheduler.service import WATCHED_KINDS
from simcluster.api.errors import ApiError
from simcluster.autoscaler.records import ScaleUp
from simcluster.faults import ALL_KINDS, FaultConfig, Faults
from simcluster.podutil import meta
from simcluster.store import NotFound
from tests.conftest import wait_until
from tests.e2e.harness import Harness
from tests.simtest.invariants import Tracker, Violation
from tests.simtest.workload import PRIORITY_CLASSES, Workload, draw, gate_opted_in

log = logging.getLogger(__name__)
CYCLES = 120
MAX_STANDBY = 2  # failovers leave the old scheduler running idle; at most this many


def replay_command(seed: int) -> str:
    return f"make simtest SEED={seed}   (or: python -m tests.simtest --seed {seed})"


@dataclass
class Found:
    seed: int
    cycle: int
    violation: Violation

    def describe(self) -> str:
        v = self.violation
        lines = [
            f"VIOLATION seed={self.seed} cycle={self.cycle} invariant {v.invariant} ({v.name})",
            f"  {v.message}",
        ]
        if v.objects:
            lines.append(f"  objects: {', '.join(v.objects)}")
        lines.append(f"  replay: {replay_command(self.seed)}")
        return "\n".join(lines)


@dataclass
class Result:
    seed: int
    cycles: int = 0
    pods: int = 0
    bound: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    churn: Counter[str] = field(default_factory=Counter)
    violations: list[Found] = field(default_factory=list)
    seconds: float = 0.0
    autoscaler: str = "none"
    fault_log: list[str] = field(default_factory=list)

    def line(self) -> str:
        faults = sum(self.faults.values())
        churn = ", ".join(f"{k} {v}" for k, v in sorted(self.churn.items())) or "none"
        return (
            f"seed {self.seed}: {self.cycles} cycles, {self.pods} pods ({self.bound} bound), "
            f"autoscaler {self.autoscaler}, {faults} faults injected, churn: {churn}, "
            f"{len(self.violations)} violation(s), {self.seconds:.1f} s"
        )


def fault_config(seed: int, text: str | None) -> FaultConfig:
    """``None``: every kind at its default rate (``all``); ``""``: none."""
    if text is None:
        return FaultConfig.from_dict({**ALL_KINDS, "seed": seed})
    return FaultConfig.from_text(text, seed=seed)


def run(
    seed: int,
    *,
    cycles: int = CYCLES,
    faults: FaultConfig | None = None,
    restarts: bool = True,
    churn: bool = True,
    sabotage: Callable[[Harness, int], None] | None = None,
    stop_at_first: bool = False,
    workload: Workload | None = None,
) -> Result:
    """Play ``seed`` (its drawn workload, or ``workload``). ``sabotage(harness, cycle)``, when
    given, runs after each cycle, before its checks (a test that shows an invariant catches
    its bug breaks something there)."""
    workload = workload or draw(seed)
    faults = faults if faults is not None else fault_config(seed, None)
    result = Result(seed, autoscaler=workload.autoscaler)
    started = time.perf_counter()
    injectors: list[Faults] = []

    def setup(h: Harness) -> None:
        """Before the scheduler starts: its informers' first watches meet the faults as every
        later request does (started before, they raced the faults' installation, and whether a
        first resume could be answered 410 depended on the machine's load)."""
        _prepare(h, workload)
        injector = Faults(faults, h.cluster)
        h.server.faults = injector  # each request's faults
        h.sim.faults = injector  # each round's: nodes, budgets (Simulation.step ticks it)
        injectors.append(injector)

    h = Harness(
        workload.scenario, autoscaler=workload.autoscaler, setup=setup, uid_seed=f"simtest/{seed}"
    )
    try:
        injector = injectors[0]
        tracker = Tracker(
            gates_on=workload.gated,
            autoscaler=workload.autoscaler,
            grace=3 if faults.enabled else 1,
        )
        rng = random.Random(seed * 7919 + 1)
        for cycle in range(1, cycles + 1):
            if churn:
                _churn(h, rng, tracker, result)
            if restarts:
                _restart(h, rng, result)
            h.sim.step(h.clock.now())
            tracker.open_cycle(h.store, h.clock.now())
            injected = sum(injector.counts.values())
            try:
                report = _cycle(h)
            except AssertionError as error:  # the informers never caught up: nothing holds
                stuck = Violation(7, f"the scheduler did not catch up with the cluster: {error}")
                result.violations.append(Found(seed, cycle, stuck))
                result.cycles = cycle
                break
            if sabotage is not None:
                sabotage(h, cycle)
            tracker.deleted.update(_deleted_by_faults(injector))
            tracker.refused = _refused_status_writes(injector, injected)
            tracker.bind_refused.update(_refused_binds(injector, injected))
            summary = None
            if workload.autoscaler != "none":
                false_ups = _false_scale_ups(h.sim.ledger.scale_ups, tracker.queue_changed)
                summary = {**h.sim.ledger.summary(), "false_scale_ups": false_ups}
            for violation in tracker.check(h.store, report, summary):
                result.violations.append(Found(seed, cycle, violation))
            result.cycles = cycle
            h.clock.advance(1)
            if stop_at_first and result.violations:
                break
        result.faults = injector.summary()
        result.fault_log = list(injector.log)
        pods = h.store.list("pods")[0]
        result.pods = workload_pod_count(workload)
        result.bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    finally:
        h.server.faults = None
        h.sim.faults = None
        h.close()
        result.seconds = time.perf_counter() - started
    return result


def workload_pod_count(workload: Workload) -> int:
    return sum(int(item.get("replicas") or 1) for item in workload.scenario["workload"])


def _prepare(h: Harness, workload: Workload) -> None:
    for name, value in PRIORITY_CLASSES.items():
        h.store.create(
            "priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    if workload.gated:
        for arrival in h.sim.scenario.arrivals if h.sim.scenario else []:
            gate_opted_in(arrival.pods)


def _settle(h: Harness) -> None:
    """Wait until the scheduler's informers have seen the cluster's objects as they are.

    As ``Harness.settle``, kind by kind (``CacheFeeder.caught_up``: each kind has its own
    watch), but up to each kind's newest live object rather than its newest event: an
    informer that missed changes (a watch cut, a resume answered 410) learns of them from its
    relist, which holds no deleted object, so neither a deletion nor the last change of an
    object deleted since can be waited for; what a relist delivers can."""
    targets = {
        kind: max((int(meta(obj)["resourceVersion"]) for obj in h.store.list(kind)[0]), default=0)
        for kind in WATCHED_KINDS
    }
    wait_until(lambda: h.service.feeder.caught_up(targets.__getitem__), timeout=10)


def _cycle(h: Harness) -> CycleReport:
    """One cycle as ``Harness.cycle`` runs it, the invariants left to the caller."""
    _settle(h)
    report = h.service.run_once()
    # The checks read the cluster once every write of the cycle has landed; one still in
    # flight after 10 s is reported (as the informers not catching up), not checked around.
    assert h.service.gate_pool.wait_idle(10), "gate removals did not finish within 10 s"
    assert h.service.cache.wait_for_writes(10), "asynchronous writes did not finish within 10 s"
    _settle(h)
    h.reports.append(report)
    del h.reports[:-5]
    return report


def _restart(h: Harness, rng: random.Random, result: Result) -> None:
    draw = rng.random()
    if draw < 0.01:
        h.restart()
        result.churn["restart"] += 1
    elif draw < 0.015 and len(h.standby) < MAX_STANDBY:
        h.failover()
        result.churn["failover"] += 1


def _churn(h: Harness, rng: random.Random, tracker: Tracker, result: Result) -> None:
    """Users and controllers: a pod deleted, a queue's capability changed, a queue closed or
    opened again. (The simulated autoscalers add nodes on their own.)

    Every choice takes one draw of ``rng`` whatever it chooses from (``_pick``): a replay
    whose cluster differs a little (a pod evicted a cycle later, as the scheduler's threads
    interleave) still deletes and changes at the same cycles, instead of drawing differently
    from then on (``random.choice`` draws as many bits as the list's length needs)."""
    if rng.random() < 0.03:
        pods = sorted(
            (p for p in h.store.list("pods")[0] if not meta(p).get("deletionTimestamp")),
            key=lambda p: (meta(p)["namespace"], meta(p)["name"]),
        )
        pod = _pick(rng, pods)
        if pod is not None:
            with contextlib.suppress(NotFound, ApiError):
                h.cluster.delete("pods", meta(pod)["namespace"], meta(pod)["name"], {})
                tracker.deleted.add(f"pod/{meta(pod)['namespace']}/{meta(pod)['name']}")
                if (meta(pod).get("annotations") or {}).get(GROUP_NAME_ANNOTATION):
                    result.churn["gang pod deleted"] += 1
                else:
                    result.churn["pod deleted"] += 1
    if rng.random() < 0.02:
        queues = sorted(meta(q)["name"] for q in h.store.list("queues")[0])
        name = _pick(rng, queues)
        change, value = rng.random(), rng.random()
        if name is None:
            return
        if change < 0.5:
            cpu = str((1, 2, 4, 8, 16)[int(value * 5)])

            def capability(queue: dict) -> None:
                queue.setdefault("spec", {})["capability"] = {"cpu": cpu}

            _mutate(h, "queues", name, capability)
            tracker.queue_changed[name] = h.clock.now()
            result.churn["queue capability changed"] += 1
        else:
            state = ("Closed", "Open")[int(value * 2)]

            def close(queue: dict) -> None:
                queue.setdefault("status", {})["state"] = state

            _mutate(h, "queues", name, close)
            tracker.queue_changed[name] = h.clock.now()
            result.churn[f"queue {state.lower()}"] += 1


def _pick(rng: random.Random, items: list):
    """One of ``items`` (None when empty) for exactly one draw of ``rng``."""
    draw = rng.random()
    return items[int(draw * len(items))] if items else None


def _false_scale_ups(scale_ups: list[ScaleUp], queue_changed: dict[str, float]) -> int:
    """The false scale-ups the scheduler answers for. The simulation steps (the autoscalers
    act) between the churn and the cycle: a scale-up whose every triggering pod's queue the
    churn changed at that very step was made on PodScheduled conditions the scheduler wrote
    before the change, while the queue had room (the next cycle rewrites them). That is the
    user's change racing the autoscaler's loop, as it can in a real cluster, not a wrong
    marking."""
    return sum(
        1
        for record in scale_ups
        if record.false_scale_up
        and not all(queue_changed.get(p.queue) == record.time for p in record.pods)
    )


def _mutate(h: Harness, kind: str, name: str, change: Callable[[dict], None]) -> None:
    with contextlib.suppress(NotFound):
        h.store.mutate(kind, "", name, change)


def _deleted_by_faults(faults: Faults) -> set[str]:
    return {
        "pod/" + line.split(": ", 1)[1].split(" before ")[0]
        for line in faults.log
        if line.startswith("pod_delete: ")
    }


REFUSED = ("conflict: ", "throttle: ", "server_error: ")


def _refused_lines(faults: Faults, before: int) -> list[list[str]]:
    """The paths, split on "/", of the writes an injected fault refused since ``before``
    faults had been injected (the log keeps the last 1000 lines)."""
    new = sum(faults.counts.values()) - before
    lines = faults.log[-new:] if new > 0 else []
    return [
        line.split(" ", 2)[-1].split("/") for line in lines if line.startswith(REFUSED)
    ]  # fmt: skip


def _refused_binds(faults: Faults, before: int) -> set[str]:
    """The pods whose bind an injected fault refused since ``before`` faults had been injected:
    the binding (``POST …/pods/<name>/binding``) or the gate removal sent just before it on
    the bind path (``PATCH …/pods/<name>``)."""
    return {
        f"pod/{parts[4]}/{parts[6]}"
        for parts in _refused_lines(faults, before)  # ['', 'api', 'v1', 'namespaces', ns, …]
        if parts[1:4] == ["api", "v1", "namespaces"]
        and len(parts) in (7, 8)
        and parts[5] == "pods"
        and parts[7:] in ([], ["binding"])
    }


def _refused_status_writes(faults: Faults, before: int) -> set[str]:
    """The pods whose status writes (``PATCH …/pods/<name>/status``) an injected fault refused
    since ``before`` faults had been injected (the log keeps the last 1000 lines)."""
    new = sum(faults.counts.values()) - before
    lines = faults.log[-new:] if new > 0 else []
    refused = set()
    for line in lines:
        if not line.startswith(REFUSED) or not line.endswith("/status"):
            continue
        parts = line.split(" ", 2)[-1].split("/")  # /api/v1/namespaces/<ns>/pods/<name>/status
        if len(parts) == 8 and parts[5] == "pods":
            refused.add(f"pod/{parts[4]}/{parts[6]}")
    return refused
