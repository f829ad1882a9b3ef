"""Records of what the simulated autoscalers did, and what it was worth.

Each scale-up remembers the pods that triggered it and, per pod, whether its queue would ever
have let it run (queue used + its request within ``spec.capability``). A scale-up where no
triggering pod could have run is a *false scale-up*. The ledger also measures whether a
triggering pod landed on the new node and the node's *wasted time*: seconds it existed
without any pod other than DaemonSet or static pods.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict, dataclass, field

from scheduler.api.labels import SCALE_UP_ANNOTATION
from scheduler.api.quantity import QuantityError, parse_resource_list
from simcluster.podutil import (
    Resources,
    add,
    is_daemon_or_mirror,
    is_finished,
    meta,
    pod_queue,
    pod_requests,
    podgroup_queues,
)
from simcluster.store import NotFound, Store

log = logging.getLogger(__name__)


@dataclass
class TriggeringPod:
    namespace: str
    name: str
    uid: str
    queue: str
    could_run: bool  # would its queue have admitted it, at the time of the scale-up?
    landed: bool = False  # did it later run on the new node?


@dataclass
class ScaleUp:
    time: float
    autoscaler: str
    node_group: str
    node_name: str
    pods: list[TriggeringPod]
    node_ready_at: float | None = None
    node_removed_at: float | None = None
    wasted_seconds: float = 0.0

    @property
    def false_scale_up(self) -> bool:
        return not any(p.could_run for p in self.pods)

    @property
    def landed(self) -> bool:
        return any(p.landed for p in self.pods)

    def to_dict(self) -> dict:
        return {**asdict(self), "false_scale_up": self.false_scale_up, "landed": self.landed}


@dataclass
class ScaleDown:
    time: float
    autoscaler: str
    node_group: str
    node_name: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


class QueueBook:
    """Queue capability and use at one moment, to judge whether a pod could run at all."""

    def __init__(self, store: Store) -> None:
        self._groups = podgroup_queues(store)
        self.capability: dict[str, Resources] = {}
        for queue in store.list("queues")[0]:
            name = meta(queue)["name"]
            rl = (queue.get("spec") or {}).get("capability")
            try:
                self.capability[name] = parse_resource_list(
                    rl, obj=f"queue {name}", field="spec.capability"
                )
            except QuantityError as exc:  # one bad queue must not stop every scale-up
                log.warning("%s; treating the queue as unlimited", exc)
        # What the queue's pods hold: bound and not finished, nor terminating — a deleted pod
        # releases its share within its grace period, and Volcano's queue figures count only
        # the tasks holding it (api.AllocatedStatus: a Releasing task is not allocated), so a
        # pod waiting only for it will run in its queue.
        self.used: dict[str, Resources] = {}
        for pod in store.list("pods")[0]:
            if (
                (pod.get("spec") or {}).get("nodeName")
                and not is_finished(pod)
                and not meta(pod).get("deletionTimestamp")
            ):
                add(self.used.setdefault(self.queue_of(pod), {}), pod_requests(pod))

    def queue_of(self, pod: dict) -> str:
        return pod_queue(pod, self._groups)

    def could_run(self, pod: dict) -> bool:
        # Dimensions a capability leaves out are unlimited, as in Volcano; and only those the
        # pod asks for are checked (Volcano's capacity plugin compares with
        # LessEqualWithDimension(..., req)): a best-effort pod asks its queue for nothing, so
        # a queue above a capability lowered under its running pods still takes it.
        queue = self.queue_of(pod)
        capability, used = self.capability.get(queue) or {}, self.used.get(queue) or {}
        request = pod_requests(pod)
        return all(
            used.get(r, 0) + request[r] <= limit
            for r, limit in capability.items()
            if request.get(r, 0) > 0
        )

    def triggering(self, pod: dict) -> TriggeringPod:
        m = meta(pod)
        return TriggeringPod(
            m.get("namespace", ""),
            m["name"],
            m.get("uid", ""),
            self.queue_of(pod),
            self.could_run(pod),
        )


@dataclass
class Ledger:
    """Every scale-up and scale-down, with landing and wasted node-time kept current."""

    scale_ups: list[ScaleUp] = field(default_factory=list)
    scale_downs: list[ScaleDown] = field(default_factory=list)
    _last_observed: float | None = None
    _empty: set[str] = field(default_factory=set)  # node names empty at the last observation

    def by_node(self, node_name: str) -> ScaleUp | None:
        return next((r for r in reversed(self.scale_ups) if r.node_name == node_name), None)

    def observe(self, store: Store, now: float) -> None:
        """Charge the time since the last look to nodes that were empty, then look again."""
        if self._last_observed is not None:
            elapsed = max(0.0, now - self._last_observed)
            for record in self._live():
                if record.node_name in self._empty:
                    record.wasted_seconds += elapsed
        self._last_observed = now
        self._empty = set()
        if not self._live():
            return  # nothing provisioned: no need to list the cluster
        nodes = {meta(n)["name"] for n in store.peek_all("nodes")}
        busy: dict[str, set[str]] = {}
        for pod in store.peek_all("pods"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and not is_finished(pod) and not is_daemon_or_mirror(pod):
                busy.setdefault(node, set()).add(meta(pod).get("uid", ""))
        for record in self._live():
            if record.node_name not in nodes:
                continue
            on_node = busy.get(record.node_name, set())
            self._empty |= set() if on_node else {record.node_name}
            newly = [p for p in record.pods if not p.landed and p.uid in on_node]
            for pod in newly:
                pod.landed = True
            if newly:
                publish_annotation(store, record)

    def _live(self) -> list[ScaleUp]:
        return [
            r for r in self.scale_ups if r.node_ready_at is not None and r.node_removed_at is None
        ]

    def state(self) -> dict:
        """Everything this ledger knows, as plain data (``--state``; see ``restore``)."""
        return {
            "scaleUps": [asdict(r) for r in self.scale_ups],
            "scaleDowns": [asdict(r) for r in self.scale_downs],
            "lastObserved": self._last_observed,
            "empty": sorted(self._empty),
        }

    def restore(self, state: dict) -> None:
        self.scale_ups = [
            ScaleUp(**{**r, "pods": [TriggeringPod(**p) for p in r["pods"]]})
            for r in state.get("scaleUps") or []
        ]
        self.scale_downs = [ScaleDown(**r) for r in state.get("scaleDowns") or []]
        self._last_observed = state.get("lastObserved")
        self._empty = set(state.get("empty") or [])

    def summary(self) -> dict:
        return {
            "scale_ups": len(self.scale_ups),
            "false_scale_ups": sum(r.false_scale_up for r in self.scale_ups),
            "landed_scale_ups": sum(r.landed for r in self.scale_ups),
            "wasted_node_seconds": sum(r.wasted_seconds for r in self.scale_ups),
            "scale_downs": len(self.scale_downs),
        }


def publish_annotation(store: Store, record: ScaleUp) -> None:
    """The record as JSON on the node, for readers that only have the API."""
    payload = json.dumps(record.to_dict(), sort_keys=True)

    def change(node: dict) -> None:
        node["metadata"].setdefault("annotations", {})[SCALE_UP_ANNOTATION] = payload

    with contextlib.suppress(NotFound):
        store.mutate("nodes", "", record.node_name, change)
