"""drf: dominant resource fairness (``pkg/scheduler/plugins/drf/drf.go`` at Volcano commit
ed72c7c815a9fd547a787134676f73d42e9d049c).

A job's share is its dominant share: the largest fraction of the cluster's total (every
node's allocatable) that its allocated tasks hold in any one resource. Jobs with the smaller
share go first; a preemptor may evict a task whose job, without it, would still hold at least
the share the preemptor's job would hold with the preemptor placed (the shares of the
victims' jobs fall as their tasks are chosen, one after another).

Left out: the hierarchical variant (``enableHierarchy: true``, hdrf: queue shares over the
``volcano.sh/hierarchy`` annotation tree, with its own queue order and reclaim) is a
configuration error; and Volcano's drf at this commit has no namespace order (its
``namespaceOpts`` is never filled), so neither has Sluice's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.job_info import JobInfo
from scheduler.api.resource import Resource
from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session

SHARE_DELTA = 0.000001  # Volcano's shareDelta: shares this close are equal
_MIN_RESOURCE = 0.1  # Volcano's minResource: a total below it is not a dimension


class DrfPlugin(Plugin):
    name = "drf"

    def check(self) -> None:
        super().check()
        if self.enabled("enableHierarchy"):
            raise ValueError("drf enableHierarchy (hdrf) is not implemented")

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total = Resource()
        for node in ssn.nodes.values():
            self.total.add(node.allocatable)
        self.allocated: dict[str, Resource] = {}
        self.shares: dict[str, float] = {}
        for job in ssn.jobs.values():
            allocated = job.allocated.clone()
            for task in job.index.get(TaskStatus.PIPELINED, {}).values():
                # A pipelined task persisted by an earlier cycle counts, as one pipelined in
                # this cycle does through the allocate event.
                allocated.add(task.resreq)
            self.allocated[job.uid] = allocated
            self.shares[job.uid] = self.share(allocated)
        ssn.add_preemptable_fn(self, self.preemptable)
        ssn.add_job_order_fn(self, self._job_share)
        ssn.add_event_handler(lambda t: self._on_change(t, +1), lambda t: self._on_change(t, -1))

    def share(self, allocated: Resource) -> float:
        """Volcano's calculateShare: the largest allocated/total over the dimensions the
        cluster has (at least minResource of)."""
        best = 0.0
        for name, total in self.total.values.items():
            if total < _MIN_RESOURCE:
                continue
            best = max(best, allocated.get(name) / total)
        return best

    def _job_share(self, job: JobInfo) -> float:
        return self.shares.get(job.uid, 0.0)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        own = self.allocated.get(preemptor.job_id)
        if own is None:
            return []  # Volcano: no victims, and the tier decides nothing
        wanted = self.share(own.clone().add(preemptor.resreq))
        left: dict[str, Resource] = {}
        victims = []
        for task in candidates:
            if task.job_id not in left:
                if task.job_id not in self.allocated:
                    continue
                left[task.job_id] = self.allocated[task.job_id].clone()
            remaining = self.share(left[task.job_id].sub(task.resreq))
            if wanted < remaining or abs(wanted - remaining) <= SHARE_DELTA:
                victims.append(task)
        return victims

    def _on_change(self, task: TaskInfo, sign: int) -> None:
        allocated = self.allocated.get(task.job_id)
        if allocated is None:
            return
        if sign > 0:
            allocated.add(task.resreq)
        else:
            allocated.sub(task.resreq)
        self.shares[task.job_id] = self.share(allocated)


__all__ = ["DrfPlugin"]
