"""Writer: every change a cycle makes to the cluster passes here, and is recorded.

In *observe* mode (``act=False``) nothing reaches the ClusterClient, but the transitions are
still recorded, so the report shows what the scheduler would have done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from scheduler.api.helpers import pod_condition
from scheduler.api.task_info import TaskInfo
from scheduler.cache.cache import SchedulerCache
from scheduler.cache.client import ClusterClient

GateRemover = Callable[[str, str, str], None]
"""Queues the removal of our gate from pod (namespace, name, uid), asynchronously."""


@dataclass
class Transition:
    namespace: str
    name: str
    uid: str
    from_status: str
    to_status: str
    node: str
    reason: str
    queue: str = ""  # the queue of the pod's job, so history needs no lookup

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Writer:
    def __init__(
        self,
        cache: SchedulerCache,
        client: ClusterClient | None,
        act: bool = True,
        gate_remover: GateRemover | None = None,
        persist_pipelines: bool = True,
    ):
        self.cache, self.client = cache, client
        self.act = act and client is not None
        self.persist_pipelines = persist_pipelines
        self.gate_remover = gate_remover
        self.gates_queued = 0
        self._removed_inline: set[str] = set()
        self.transitions: list[Transition] = []
        self.errors: list[str] = []
        self.jobs: Mapping[str, Any] = {}  # the session's jobs (set when it opens): for queues

    def _record(self, task: TaskInfo, old: str, new: str, node: str, reason: str) -> None:
        job = self.jobs.get(task.job_id)
        self.transitions.append(Transition(
            task.namespace, task.name, task.uid, old, new, node, reason, job.queue if job else ""
        ))  # fmt: skip

    def bind(self, task: TaskInfo, node_name: str) -> None:
        if self.act:
            try:
                gate_removed = task.uid in self._removed_inline
                self.cache.bind(task, node_name, self.client, gate_removed=gate_removed)
            except Exception as exc:  # one failed bind must not stop the others
                self.errors.append(f"bind {task.namespace}/{task.name} to {node_name}: {exc}")
                self._record(task, "Pending", "Pending", node_name, f"bind failed: {exc}")
                return
        self._record(task, "Pending", "Binding", node_name, "allocated")

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Persist a pipeline decision through the cache (seed 002): the only path that sets
        ``status.nominatedNodeName``. Raises when the cache cannot take it (the statement
        then unpipelines the task). With persistence off the decision ends with the cycle,
        as in Volcano before seed 002, and nothing is written."""
        if not self.persist_pipelines:
            return
        if self.act:
            if not self.cache.pipeline(task, node_name, self.client):
                return  # the cache already holds this decision: no new transition or event
            message = (
                f"pod {task.namespace}/{task.name} pipelined to node {node_name}, waiting for "
                "resources to be released"
            )
            self.event(task.pod, "Normal", "Pipelined", message)
        reason = "waiting for resources to be released"
        self._record(task, "Pending", "Pipelined", node_name, reason)

    def unpipeline(self, task: TaskInfo, node_name: str, reason: str) -> None:
        """Release a persisted decision that no longer holds (its pod loses nominatedNodeName)."""
        if self.act and not self.cache.unpipeline(task, self.client):
            return
        self._record(task, "Pipelined", "Pending", node_name, reason)

    def evict(self, task: TaskInfo, reason: str) -> None:
        if self.act:
            self.cache.evict(task, reason, self.client)
        self._record(task, task.status.value, "Releasing", task.node_name, reason)

    def remove_gate(self, task: TaskInfo) -> None:
        reason = "queue has capacity: queue-allocation gate removed"
        self._record(task, "Gated", "Pending", "", reason)
        if not self.act:
            return
        if self.gate_remover is None:
            self.client.remove_scheduling_gate(task.pod)  # no worker pool: do it in line
            self._removed_inline.add(task.uid)
        else:
            # Queued, never awaited: a cycle does not wait for the round trip (seed 000).
            self.gate_remover(task.namespace, task.name, task.uid)
            self.gates_queued += 1
        self.cache.note_gate_removed(task)

    def pod_condition(self, task: TaskInfo, condition: dict[str, str]) -> None:
        """Patch ``PodScheduled`` only when it changes, as Volcano's podConditionHaveUpdate."""
        current = pod_condition(task.pod, condition["type"]) or {}
        same = all(current.get(k) == condition[k] for k in ("status", "reason", "message"))
        if self.act and not same:
            self.client.patch_pod_condition(task.pod, condition)

    def podgroup_status(self, podgroup: Mapping[str, Any], status: dict[str, Any]) -> None:
        if self.act:
            self.client.patch_podgroup_status(podgroup, status)

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        if self.act:
            self.client.record_event(obj, event_type, reason, message)
