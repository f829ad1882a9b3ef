"""The simulation loop: scenario arrivals, the kubelet and an autoscaler, all at simulated time.

``step(now)`` does one round at ``now`` and is what virtual-time tests call. ``start()`` runs
rounds in a daemon thread every ``tick`` wall seconds against the injected clock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from scheduler.clock import Clock, VirtualClock
from simcluster.autoscaler import ClusterAutoscaler, Karpenter, Ledger
from simcluster.faults import Faults
from simcluster.kubelet import Kubelet
from simcluster.podutil import meta
from simcluster.scenario import Scenario
from simcluster.store import AlreadyExists, Store

log = logging.getLogger(__name__)

AUTOSCALERS = ("none", "cluster-autoscaler", "karpenter")


class Simulation:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        create_pod: Callable[[dict], dict] | None = None,
        autoscaler: str = "none",
        scenario: Scenario | None = None,
        tick: float = 0.1,
        autoscaler_options: dict | None = None,
        kubelet_options: dict | None = None,
        faults: Faults | None = None,
    ) -> None:
        if autoscaler not in AUTOSCALERS:
            raise ValueError(f"autoscaler {autoscaler!r}: expected one of {', '.join(AUTOSCALERS)}")
        self.store, self.clock, self.scenario, self.tick = store, clock, scenario, tick
        self.create_pod = create_pod or (lambda obj: store.create("pods", obj))
        kubelet_defaults = {
            "startup_delay": scenario.startup_delay if scenario else 1.0,
            "delete_completed": scenario.delete_completed if scenario else False,
        }
        self.kubelet = Kubelet(store, **{**kubelet_defaults, **(kubelet_options or {})})
        self.ledger = Ledger()
        # Seeded cluster-level faults (simcluster.faults: nodes NotReady, tainted or deleted,
        # PodDisruptionBudgets), one draw per round; None: off.
        self.faults = faults
        groups = scenario.node_groups if scenario else []
        options = autoscaler_options or {}
        self.autoscaler: ClusterAutoscaler | Karpenter | None = None
        if autoscaler == "cluster-autoscaler":
            self.autoscaler = ClusterAutoscaler(store, groups, self.ledger, **options)
        elif autoscaler == "karpenter":
            self.autoscaler = Karpenter(store, groups, self.ledger, **options)
        self.started_at: float | None = None
        self.errors: list[str] = []  # arrivals the API refused, for the operator to see
        self._next_arrival = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Called after every round, outside the lock (``--state`` records ``progress()``).
        self.on_step: Callable[[], None] | None = None

    # -- one round ---------------------------------------------------------------------------

    def install(self, now: float) -> None:
        """Put the scenario's cluster objects in the store (kept if already there)."""
        self.started_at = now
        if self.scenario is None:
            return
        for kind, objects in (
            ("namespaces", self.scenario.namespaces),
            ("queues", self.scenario.queues),
            ("nodes", self.scenario.nodes),
        ):
            for obj in objects:
                _create_if_absent(self.store, kind, obj)

    def step(self, now: float) -> None:
        with self._lock:
            if self.started_at is None:
                self.install(now)
            self._arrive(now)
            if self.faults is not None:
                self.faults.tick(self.store, now)
            self.kubelet.tick(now)
            if self.autoscaler is not None:
                self.autoscaler.tick(now)
            self.ledger.observe(self.store, now)
        if self.on_step is not None:
            self.on_step()

    def _arrive(self, now: float) -> None:
        arrivals = self.scenario.arrivals if self.scenario else []
        while self._next_arrival < len(arrivals):
            arrival = arrivals[self._next_arrival]
            if self.started_at + arrival.at > now:
                break
            self._next_arrival += 1
            for group in arrival.podgroups:
                _create_if_absent(self.store, "podgroups", group)
            for pod in arrival.pods:
                self._create_pod(pod)

    def _create_pod(self, pod: dict) -> None:
        try:
            self.create_pod(pod)
        except AlreadyExists:
            pass  # Restored state already has it.
        except Exception as exc:  # the API layer refused it; report and go on
            ref = f"{meta(pod).get('namespace')}/{meta(pod).get('name')}"
            self.errors.append(f"pod {ref}: {exc}")
            log.warning("scenario pod %s not created: %s", ref, exc)

    def report(self) -> dict:
        """Autoscaler activity as plain data (a consistent copy, safe from any thread)."""
        with self._lock:
            return {
                "autoscaler": self.autoscaler.name if self.autoscaler else "none",
                "summary": self.ledger.summary(),
                "scale_ups": [r.to_dict() for r in self.ledger.scale_ups],
                "scale_downs": [r.to_dict() for r in self.ledger.scale_downs],
                "errors": list(self.errors),
                "faults": self.faults.summary() if self.faults is not None else {},
            }

    def progress(self) -> dict:
        """What the store does not hold, as plain data (``--state``): how far the scenario's
        arrivals have come, the autoscaler's launches in flight and its ledger. The
        autoscalers' own timers are left out: they start afresh, as a restarted Cluster
        Autoscaler's do."""
        with self._lock:
            return {
                "scenario": self.scenario.name if self.scenario else None,
                "startedAt": self.started_at,
                "nextArrival": self._next_arrival,
                "launches": self.autoscaler.launches_state() if self.autoscaler else [],
                "ledger": self.ledger.state(),
            }

    def resume(self, progress: dict) -> None:
        """Take up ``progress()`` from an earlier run, before ``start``. The scenario goes on
        where it was (a pod it created and that was deleted since is not created again); the
        progress of another scenario is not taken up (this one starts, next to the objects
        restored)."""
        with self._lock:
            self.ledger.restore(progress.get("ledger") or {})
            if self.autoscaler is not None:
                self.autoscaler.resume_launches(progress.get("launches") or [])
            name = self.scenario.name if self.scenario else None
            if progress.get("scenario") != name:
                log.warning(
                    "restored state is of scenario %s, not %s: %s starts from its beginning",
                    progress.get("scenario"),
                    name,
                    name,
                )
                return
            if progress.get("startedAt") is not None:
                self.started_at = float(progress["startedAt"])
                self._next_arrival = int(progress.get("nextArrival") or 0)

    def arrivals_left(self) -> int:
        return len(self.scenario.arrivals) - self._next_arrival if self.scenario else 0

    def attach(self, clock: VirtualClock, every: float = 1.0) -> None:
        """Step on a virtual clock's event heap every ``every`` simulated seconds, so other
        discrete events (a scheduler cycle, a test's pokes) interleave deterministically."""

        def tick() -> None:
            self.step(clock.now())
            clock.call_later(every, tick, priority=1)

        clock.call_later(0.0, tick, priority=1)

    # -- background thread -------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sluice-sim", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step(self.clock.now())
            except Exception:  # keep simulating; one bad round must not stop the cluster
                log.exception("simulation step failed")
            self._stop.wait(self.tick)


def _create_if_absent(store: Store, kind: str, obj: dict) -> None:
    with contextlib.suppress(AlreadyExists):
        store.create(kind, obj)
