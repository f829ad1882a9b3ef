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
from simcluster.store import Key, NotFound, Store, WatchEvent, object_key, utc_timestamp

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
COMPONENT = "kubelet"


class Kubelet:
    """Driven by the pods that changed, as a real kubelet is by its pod watch: every write to
    a pod or node reaches ``_observe`` (a store observer, under the store's lock), and a round
    visits only the pods that changed since the last one, the pods waiting on time (to start,
    to finish, to be let go after their grace period) and the pods bound to a node that just
    appeared. Each node's admitted requests are kept up to date pod by pod. The first round
    (and one after ``Store.load``) reads every pod once."""

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
        self._allocatable: dict[str, Resources] = {}  # node -> allocatable
        self._used: dict[str, Resources] = {}  # node -> what its admitted pods request
        self._charged: dict[str, tuple[str, Resources]] = {}  # uid -> (node, request) in _used
        self._pods: dict[Key, dict] = {}  # the pods as last written (the store's own dicts)
        self._nodes: set[str] = set()
        self._timed: set[Key] = set()  # pods a round visits whether they changed or not
        self._dirty_pods: set[Key] = set()
        self._dirty_nodes: set[str] = set()
        self._synced = False
        self._generation = store.generation
        store.add_observer(self._observe)

    def _observe(self, event: WatchEvent) -> None:
        """Store observer: note what changed (cheap, under the store's lock)."""
        if event.kind == "pods":
            self._dirty_pods.add(object_key(event.object))
        elif event.kind == "nodes":
            self._dirty_nodes.add(meta(event.object).get("name", ""))

    def tick(self, now: float) -> None:
        with self.store.locked():
            if not self._synced or self._generation != self.store.generation:
                self._resync()
            dirty_pods, self._dirty_pods = self._dirty_pods, set()
            dirty_nodes, self._dirty_nodes = self._dirty_nodes, set()
            pods = {key: self.store.peek("pods", *key) for key in dirty_pods}
            nodes = {name: self.store.peek("nodes", "", name) for name in dirty_nodes}
        new_nodes = self._update_nodes(nodes, now)
        for key, obj in pods.items():
            self._update_pod(key, obj)
        visit = set(pods) | self._timed
        if new_nodes:  # pods bound to a node before it was there
            visit |= {k for k, p in self._pods.items() if _node_of(p) in new_nodes}
        for key in sorted(visit):
            pod = self._pods.get(key)
            if pod is None:
                continue
            try:
                self._advance(pod, self._nodes, now)
            except NotFound:
                continue  # Deleted between our read and our write: nothing left to do.

    def _resync(self) -> None:
        """Read every pod and node (under the store's lock): the first round, or after a load."""
        for uid in list(self._charged):
            self._uncharge(uid)
        self._pods, self._nodes, self._allocatable, self._timed = {}, set(), {}, set()
        self._dirty_nodes = {meta(n)["name"] for n in self.store.peek_all("nodes")}
        self._dirty_pods = {object_key(p) for p in self.store.peek_all("pods")}
        self._synced, self._generation = True, self.store.generation

    def _update_nodes(self, nodes: dict[str, dict | None], now: float) -> set[str]:
        """Take changed nodes in; mark new ones Ready. The names that were not there before."""
        added = set()
        for name, obj in nodes.items():
            self._allocatable.pop(name, None)
            if obj is None:
                self._nodes.discard(name)
                continue
            if name not in self._nodes:
                added.add(name)
            self._nodes.add(name)
            status = obj.get("status") or {}
            if not any(c.get("type") == "Ready" for c in status.get("conditions") or []):
                try:
                    obj = self.store.mutate("nodes", "", name, _node_ready(utc_timestamp(now)))
                except NotFound:
                    self._nodes.discard(name)
                    continue
            # A node whose status cannot be read stands for a broken kubelet: it admits nothing.
            with contextlib.suppress(QuantityError):
                self._allocatable[name] = node_allocatable(obj)
        return added

    def _update_pod(self, key: Key, obj: dict | None) -> None:
        """Take a changed pod in: forget a uid that left, recharge its node."""
        before = self._pods.get(key)
        old_uid = meta(before).get("uid", "") if before is not None else None
        new_uid = meta(obj).get("uid", "") if obj is not None else None
        if old_uid is not None and old_uid != new_uid:
            self._forget(old_uid)
        if obj is None:
            self._pods.pop(key, None)
            self._timed.discard(key)
            return
        self._pods[key] = obj
        self._charge(obj)

    def _forget(self, uid: str) -> None:
        self._uncharge(uid)
        for table in (self._bound_seen, self._started, self._deleting_seen):
            table.pop(uid, None)

    def _charge(self, pod: dict) -> None:
        """Count ``pod``'s request on its node while it is admitted and not finished."""
        uid = meta(pod).get("uid", "")
        self._uncharge(uid)
        node = _node_of(pod)
        admitted = uid in self._bound_seen or (pod.get("status") or {}).get("phase") == "Running"
        if not node or not admitted or is_finished(pod):
            return
        try:
            request = pod_requests(pod)
        except QuantityError:  # never admitted: see _admit
            return
        add(self._used.setdefault(node, {}), request)
        self._charged[uid] = (node, request)

    def _uncharge(self, uid: str) -> None:
        charged = self._charged.pop(uid, None)
        if charged is not None:
            add(self._used.setdefault(charged[0], {}), charged[1], -1)

    def _free(self, node: str) -> Resources:
        used = self._used.get(node, {})
        return {r: v - used.get(r, 0) for r, v in self._allocatable.get(node, {}).items()}

    def _advance(self, pod: dict, nodes: set[str], now: float) -> None:
        uid = meta(pod).get("uid", "")
        key = object_key(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        node = _node_of(pod)
        self._timed.discard(key)
        if meta(pod).get("deletionTimestamp"):
            self._terminate(pod, uid, now)
        elif not node or node not in nodes:
            return
        elif phase == "Pending":
            if uid not in self._bound_seen and not self._admit(pod, node, now):
                return
            seen = self._bound_seen.setdefault(uid, now)
            self._charge(pod)
            if now >= seen + self.startup_delay:
                self._start(pod, uid, now)
            else:
                self._timed.add(key)
        elif phase == "Running":
            self._maybe_finish(pod, uid, now)
        elif phase == "Succeeded" and self.delete_completed:
            self._remove(pod)

    def _admit(self, pod: dict, node: str, now: float) -> bool:
        """The kubelet's admission: False (and the pod Failed) when the node cannot hold it."""
        free = self._free(node)
        try:
            request = pod_requests(pod)
        except QuantityError as exc:  # e.g. cpu: 1e400, bound by nodeName: no node holds it
            name = exc.field.rsplit(".", 1)[-1]
            message = f"Pod was rejected: Node didn't have enough resource: {name}: {exc}"
        else:
            short = sorted(name for name, value in request.items() if value > free.get(name, 0))
            if not short:
                return True  # the caller charges it
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
        else:
            self._timed.add(object_key(pod))

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
        else:
            self._timed.add(object_key(pod))

    def _remove(self, pod: dict) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete("pods", meta(pod)["namespace"], meta(pod)["name"])


def _node_of(pod: dict) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


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
