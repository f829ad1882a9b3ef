"""The disruption controller, as kube-controller-manager runs it (pkg/controller/disruption),
keeping every PodDisruptionBudget's status current.

It observes the store (``Store.add_observer``) and recomputes, before the write returns, each
PDB a pod change concerns (the pod matches its selector before or after the change) and each
PDB whose spec changes; the eviction subresource asks it again before it decides
(``sync_namespace``), so an expired ``disruptedPods`` entry is never counted. Kubernetes'
controller lags behind; this one never does, so the API never sees a PDB whose
``observedGeneration`` is behind its generation.

For one PDB, over the pods of its namespace its selector matches (a null selector matches
none, ``{}`` every pod):

- ``currentHealthy``: pods not being deleted, not recorded in ``disruptedPods`` by an eviction
  in the last two minutes (``DeletionTimeout``), and Ready (their Ready condition is True:
  ``IsPodReady``, which is all Kubernetes asks — the simulated kubelet sets Ready with Running
  and clears it when the pod completes);
- ``desiredHealthy`` and ``expectedPods``: ``minAvailable`` as an integer is desiredHealthy, and
  expectedPods is the number of matching pods; a percentage of ``minAvailable`` (rounded up) or
  ``maxUnavailable`` (integer or percentage rounded up; desiredHealthy = expected - it, at least
  0) is taken of the number of matching pods. (Kubernetes takes it of the scale of the pods'
  controllers — ReplicaSets, StatefulSets, anything with a scale subresource — and leaves pods
  without a controller out; the simulated cluster has no workload controllers.) Neither field
  set: both 0;
- ``disruptionsAllowed``: currentHealthy - desiredHealthy, and 0 when that is negative or when
  expectedPods is 0;
- ``disruptedPods``: the eviction's entries still pending (pod present, not being deleted, under
  two minutes old);
- ``observedGeneration`` and the ``DisruptionAllowed`` condition (True/SufficientPods when
  disruptions are allowed, else False/InsufficientPods).

The status is written only when one of these changes, as ``updatePdbStatus`` does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from scheduler.api.disruption_budget import selector_matches
from simcluster.podutil import condition, meta, parse_time
from simcluster.store import NotFound, Store, WatchEvent, utc_timestamp

log = logging.getLogger(__name__)

KIND = "poddisruptionbudgets"
DELETION_TIMEOUT = 120.0  # seconds: the disruption controller's DeletionTimeout
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS, INSUFFICIENT_PODS = "SufficientPods", "InsufficientPods"


# -- selectors and pods ------------------------------------------------------------------------


def pdb_matches(pdb: dict, pod: dict) -> bool:
    return meta(pdb).get("namespace") == meta(pod).get("namespace") and selector_matches(
        (pdb.get("spec") or {}).get("selector"), meta(pod).get("labels") or {}
    )


def is_pod_ready(pod: dict) -> bool:
    """Kubernetes' ``IsPodReady``: the Ready condition is True."""
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


# -- the arithmetic ----------------------------------------------------------------------------


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an integer as it is, ``"N%"`` of ``total``."""
    if isinstance(value, int):
        return value
    percent = int(value.removesuffix("%"))
    return math.ceil(percent * total / 100) if round_up else math.floor(percent * total / 100)


def expected_and_desired(spec: dict, matching: int) -> tuple[int, int]:
    """(expectedPods, desiredHealthy), as ``getExpectedPodCount`` (see the module's note on the
    count a percentage or maxUnavailable is taken of)."""
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is not None:
        unavailable = scaled_value(max_unavailable, matching, True)
        return matching, max(0, matching - unavailable)
    if min_available is not None:
        return matching, scaled_value(min_available, matching, True)
    return 0, 0


def _time(stamp: object) -> float | None:
    try:
        return parse_time(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def disrupted_pods(pods: list[dict], recorded: dict | None, now: float) -> dict[str, str]:
    """``buildDisruptedPodMap``: the entries of pods still there, not being deleted, and
    recorded less than ``DELETION_TIMEOUT`` ago."""
    result: dict[str, str] = {}
    for pod in pods:
        name = meta(pod).get("name", "")
        if meta(pod).get("deletionTimestamp") or name not in (recorded or {}):
            continue
        when = _time(recorded[name])
        if when is not None and when + DELETION_TIMEOUT >= now:
            result[name] = recorded[name]
    return result


def current_healthy(pods: list[dict], disrupted: dict[str, str], now: float) -> int:
    """``countHealthyPods``."""
    healthy = 0
    for pod in pods:
        if meta(pod).get("deletionTimestamp"):
            continue
        when = _time(disrupted.get(meta(pod).get("name", "")))
        if when is not None and when + DELETION_TIMEOUT > now:
            continue
        healthy += is_pod_ready(pod)
    return healthy


def set_disruption_allowed_condition(status: dict, now: float) -> None:
    """``UpdateDisruptionAllowedCondition`` (``meta.SetStatusCondition`` semantics: the
    transition time moves only when the condition's status does)."""
    allowed = status.get("disruptionsAllowed", 0) > 0
    conditions = status.setdefault("conditions", [])
    old = next((c for c in conditions if c.get("type") == DISRUPTION_ALLOWED), None)
    new = {"type": DISRUPTION_ALLOWED, "status": "True" if allowed else "False"}
    if status.get("observedGeneration"):
        new["observedGeneration"] = status["observedGeneration"]
    unchanged = old is not None and old.get("status") == new["status"]
    new["lastTransitionTime"] = (
        old.get("lastTransitionTime") if unchanged else None
    ) or utc_timestamp(now)
    new["reason"] = SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS
    new["message"] = ""  # metav1.Condition's field order, as kube-apiserver renders it
    if old is None:
        conditions.append(new)
    else:
        conditions[conditions.index(old)] = new


def _conditions_up_to_date(pdb: dict) -> bool:
    """``ConditionsAreUpToDate``."""
    status = pdb.get("status") or {}
    found = next(
        (c for c in status.get("conditions") or [] if c.get("type") == DISRUPTION_ALLOWED), None
    )
    if found is None or status.get("observedGeneration") != meta(pdb).get("generation"):
        return False
    if status.get("disruptionsAllowed", 0) > 0:
        return found.get("status") == "True" and found.get("reason") == SUFFICIENT_PODS
    return found.get("status") == "False" and found.get("reason") == INSUFFICIENT_PODS


def computed_status(pdb: dict, pods: list[dict], now: float) -> dict | None:
    """The status ``trySync`` would write for ``pdb`` over ``pods`` (its namespace's pods), or
    None when the one it has is current."""
    spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
    matching = [p for p in pods if pdb_matches(pdb, p)]
    expected, desired = expected_and_desired(spec, len(matching))
    disrupted = disrupted_pods(matching, old.get("disruptedPods"), now)
    healthy = current_healthy(matching, disrupted, now)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    generation = meta(pdb).get("generation") or 0
    if (
        old.get("currentHealthy") == healthy
        and old.get("desiredHealthy") == desired
        and old.get("expectedPods") == expected
        and old.get("disruptionsAllowed") == allowed
        and (old.get("disruptedPods") or {}) == disrupted
        and (old.get("observedGeneration") or 0) == generation
        and _conditions_up_to_date(pdb)
    ):
        return None
    status: dict = {}
    if generation:
        status["observedGeneration"] = generation
    if disrupted:
        status["disruptedPods"] = disrupted
    status.update(
        disruptionsAllowed=allowed,
        currentHealthy=healthy,
        desiredHealthy=desired,
        expectedPods=expected,
        conditions=[dict(c) for c in old.get("conditions") or []],
    )
    set_disruption_allowed_condition(status, now)
    return status


# -- the controller ----------------------------------------------------------------------------


class DisruptionController:
    """Keeps PDB statuses current; ``attach`` it to a store once (the ``Cluster`` does)."""

    def __init__(self, store: Store, now: Callable[[], float]) -> None:
        self.store, self.now = store, now
        self._syncing = False  # only ever read and set under the store's lock

    @classmethod
    def attach(cls, store: Store, now: Callable[[], float]) -> DisruptionController:
        controller = cls(store, now)
        store.add_observer(controller.observe)
        return controller

    def observe(self, event: WatchEvent) -> None:
        """Store observer (called under the store's lock). Its own status writes come back
        here and are ignored; a failure is logged, never raised into the writer."""
        if self._syncing or event.kind not in ("pods", KIND):
            return
        try:
            if event.kind == KIND:
                if event.type != "DELETED":
                    self._sync(meta(event.object).get("namespace", ""), [event.object])
                return
            pods = [p for p in (event.object, event.previous) if p is not None]
            namespace = meta(event.object).get("namespace", "")
            budgets = self.store.list(KIND, namespace)[0]
            if budgets:
                concerned = [b for b in budgets if any(pdb_matches(b, p) for p in pods)]
                self._sync(namespace, concerned)
        except Exception:  # the writer's change is made; a bad PDB must not undo it
            log.exception("disruption controller: sync after %s %s failed", event.type, event.kind)

    def sync_namespace(self, namespace: str) -> None:
        """Recompute every PDB of ``namespace`` now (the eviction subresource asks first)."""
        with self.store.locked():
            self._sync(namespace, self.store.list(KIND, namespace)[0])

    def _sync(self, namespace: str, budgets: list[dict]) -> None:
        if not budgets:
            return
        with self.store.locked():
            self._syncing = True
            try:
                pods = self.store.list("pods", namespace)[0]
                now = self.now()
                for budget in budgets:
                    self._sync_one(budget, pods, now)
            finally:
                self._syncing = False

    def _sync_one(self, budget: dict, pods: list[dict], now: float) -> None:
        name = meta(budget).get("name", "")
        namespace = meta(budget).get("namespace", "")
        try:
            current = self.store.get(KIND, namespace, name)
        except NotFound:
            return
        status = computed_status(current, pods, now)
        if status is not None:
            self.store.mutate(KIND, namespace, name, lambda pdb: pdb.update(status=status))
