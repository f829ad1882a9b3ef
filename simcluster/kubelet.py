"""The simulated kubelet: runs bound pods through Pending -> Running -> Succeeded, and lets
deleted pods go after their grace period.

Times are kept in memory at full precision (``status.startTime`` has one-second resolution);
after a restore they fall back to the timestamps in the objects. A deleted pod's grace period
counts from the first round that sees its ``deletionTimestamp`` (the API layer sets it to
delete time + grace, as kube-apiserver does; both agree to within one round), and reads
``deletionGracePeriodSeconds`` every round, so a later, shorter delete takes effect.
Binding and scheduling events are the scheduler's job; the kubelet emits ``Started`` and
``Killing``.

Like the kubelet's admission (its predicate admit handler), a pod bound to a node whose
allocatable cannot hold it beside the pods already admitted there is rejected: phase Failed,
reason ``OutOf<resource>`` (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``), sized by Kubernetes'
effective request (``scheduler.api.requests``).
"""

from __future__ import annotations

import contextlib
import logging

from scheduler.api.labels import DURATION_ANNOTATION, NEVER_TERMINATES_ANNOTATION
from scheduler.api.quantity import QuantityError
from simcluster.podutil import (
    Resources,
    add,
    emit_event,
    is_finished,
    meta,
    node_allocatable,
    parse_time,
    pod_ref,
    pod_requests,
)
from simcluster.store import NotFound, Store, utc_timestamp

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
COMPONENT = "kubelet"


class Kubelet:
    def __init__(
        self,
        store: Store,
        *,
        startup_delay: float = 1.0,
        delete_completed: bool = False,
    ) -> None:
        self.store = store
        self.startup_delay = startup_delay
        self.delete_completed = delete_completed
        self._bound_seen: dict[str, float] = {}  # uid -> when we first saw it bound
        self._started: dict[str, float] = {}  # uid -> simulated start time
        self._deleting_seen: dict[str, float] = {}  # uid -> when we first saw deletionTimestamp
        self._allocatable: dict[str, Resources] = {}  # node -> allocatable, this round
        self._free: dict[str, Resources] = {}  # node -> what admitted pods leave, this round

    def tick(self, now: float) -> None:
        self._mark_nodes_ready(now)
        nodes = {meta(n)["name"]: n for n in self.store.list("nodes")[0]}
        pods = self.store.list("pods")[0]
        self._allocatable = {}
        for name, node in nodes.items():
            # A node whose status cannot be read stands for a broken kubelet: it admits nothing.
            with contextlib.suppress(QuantityError):
                self._allocatable[name] = node_allocatable(node)
        self._free = self._free_on(pods)
        for pod in pods:
            try:
                self._advance(pod, set(nodes), now)
            except NotFound:
                continue  # Deleted between our list and our write: nothing left to do.
        live = {meta(p).get("uid") for p in pods}
        for table in (self._bound_seen, self._started, self._deleting_seen):
            for uid in set(table) - live:
                del table[uid]

    def _advance(self, pod: dict, nodes: set[str], now: float) -> None:
        uid = meta(pod).get("uid", "")
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        node = (pod.get("spec") or {}).get("nodeName")
        if meta(pod).get("deletionTimestamp"):
            self._terminate(pod, uid, now)
        elif not node or node not in nodes:
            return
        elif phase == "Pending":
            if uid not in self._bound_seen and not self._admit(pod, node, now):
                return
            seen = self._bound_seen.setdefault(uid, now)
            if now >= seen + self.startup_delay:
                self._start(pod, uid, now)
        elif phase == "Running":
            self._maybe_finish(pod, uid, now)
        elif phase == "Succeeded" and self.delete_completed:
            self._remove(pod)

    def _free_on(self, pods: list[dict]) -> dict[str, Resources]:
        """Each node's allocatable minus what its admitted pods request."""
        free = {name: dict(alloc) for name, alloc in self._allocatable.items()}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            admitted = meta(pod).get("uid") in self._bound_seen or (
                (pod.get("status") or {}).get("phase") == "Running"
            )
            if node in free and admitted and not is_finished(pod):
                with contextlib.suppress(QuantityError):  # never admitted: see _admit
                    add(free[node], pod_requests(pod), -1)
        return free

    def _admit(self, pod: dict, node: str, now: float) -> bool:
        """The kubelet's admission: False (and the pod Failed) when the node cannot hold it."""
        free = self._free.get(node, {})
        try:
            request = pod_requests(pod)
        except QuantityError as exc:  # e.g. cpu: 1e400, bound by nodeName: no node holds it
            name = exc.field.rsplit(".", 1)[-1]
            message = f"Pod was rejected: Node didn't have enough resource: {name}: {exc}"
        else:
            short = sorted(name for name, value in request.items() if value > free.get(name, 0))
            if not short:
                add(free, request, -1)
                return True
            name, capacity = short[0], self._allocatable.get(node, {})
            message = (
                f"Pod was rejected: Node didn't have enough resource: {name}, requested: "
                f"{request[name]}, used: {capacity.get(name, 0) - free.get(name, 0)}, "
                f"capacity: {capacity.get(name, 0)}"
            )
        self.store.mutate(
            "pods", meta(pod)["namespace"], meta(pod)["name"], _reject(f"OutOf{name}", message)
        )
        emit_event(self.store, now, pod, kind="Pod", reason=f"OutOf{name}", message=message,
                   component=COMPONENT, event_type="Warning")  # fmt: skip
        return False

    def _start(self, pod: dict, uid: str, now: float) -> None:
        stamp = utc_timestamp(now)

        def run(obj: dict) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = "Running"
            status["startTime"] = stamp
            status["conditions"] = _ready_conditions(status.get("conditions") or [], stamp)
            status["containerStatuses"] = [
                {
                    "name": c.get("name", "main"),
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": "",
                    "state": {"running": {"startedAt": stamp}},
                }
                for c in (obj.get("spec") or {}).get("containers") or []
            ]

        started = self.store.mutate("pods", meta(pod)["namespace"], meta(pod)["name"], run)
        self._started[uid] = now
        emit_event(
            self.store,
            now,
            started,
            kind="Pod",
            reason="Started",
            message="Started container",
            component=COMPONENT,
        )

    def _maybe_finish(self, pod: dict, uid: str, now: float) -> None:
        duration = (meta(pod).get("annotations") or {}).get(DURATION_ANNOTATION)
        if duration is None:
            return  # No run time: it runs until deleted.
        started = self._started.get(uid)
        if started is None:
            started = parse_time((pod.get("status") or {}).get("startTime")) or now
            self._started[uid] = started
        try:
            seconds = float(duration)
        except ValueError:
            log.warning(
                "pod %s: bad %s %r; runs forever", pod_ref(pod), DURATION_ANNOTATION, duration
            )
            return
        if now >= started + seconds:
            self.store.mutate("pods", meta(pod)["namespace"], meta(pod)["name"], _succeed(now))
            if self.delete_completed:
                self._remove(pod)

    def _terminate(self, pod: dict, uid: str, now: float) -> None:
        if not (pod.get("spec") or {}).get("nodeName"):
            self._remove(pod)  # Never ran anywhere: nothing to stop.
            return
        if (meta(pod).get("annotations") or {}).get(NEVER_TERMINATES_ANNOTATION) == "true":
            return  # stuck Terminating: nothing here will ever finish it
        if uid not in self._deleting_seen:
            self._deleting_seen[uid] = now
            emit_event(
                self.store,
                now,
                pod,
                kind="Pod",
                reason="Killing",
                message="Stopping container",
                component=COMPONENT,
            )
        grace = meta(pod).get("deletionGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if grace is None else float(grace)
        if now >= self._deleting_seen[uid] + grace:
            self._remove(pod)

    def _remove(self, pod: dict) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete("pods", meta(pod)["namespace"], meta(pod)["name"])

    def _mark_nodes_ready(self, now: float) -> None:
        for node in self.store.list("nodes")[0]:
            status = node.get("status") or {}
            if any(c.get("type") == "Ready" for c in status.get("conditions") or []):
                continue
            self.store.mutate("nodes", "", meta(node)["name"], _node_ready(utc_timestamp(now)))


def _ready_conditions(conditions: list[dict], stamp: str) -> list[dict]:
    kinds = ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    kept = [c for c in conditions if c.get("type") not in kinds]
    return kept + [
        {"type": kind, "status": "True", "lastTransitionTime": stamp, "lastProbeTime": None}
        for kind in kinds
    ]


def _reject(reason: str, message: str):  # noqa: ANN202 - a store mutation
    def change(obj: dict) -> None:
        status = obj.setdefault("status", {})
        status.update(phase="Failed", reason=reason, message=message)

    return change


def _succeed(now: float):
    stamp = utc_timestamp(now)

    def change(obj: dict) -> None:
        status = obj.setdefault("status", {})
        status["phase"] = "Succeeded"
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond.update(status="False", reason="PodCompleted", lastTransitionTime=stamp)
        for cs in status.get("containerStatuses") or []:
            started = (cs.get("state") or {}).get("running", {}).get("startedAt")
            cs["ready"] = False
            cs["state"] = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": started,
                    "finishedAt": stamp,
                }
            }

    return change


def _node_ready(stamp: str):
    def change(obj: dict) -> None:
        status = obj.setdefault("status", {})
        status.setdefault("capacity", {})
        status.setdefault("allocatable", dict(status["capacity"]))
        status.setdefault("conditions", []).append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        )

    return change
