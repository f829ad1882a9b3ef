"""pdb: Volcano's PodDisruptionBudget plugin — preempt and reclaim pick no victim whose
eviction its budget would refuse.

The eviction API refuses (429) an eviction that would take a PodDisruptionBudget below its
minimum. Without this plugin the scheduler learns it only by trying: a reclaim that needs two
victims of a budget allowing one evicts the first, is refused the second, and frees room for
nothing — again at every retry (Volcano's ``pdb`` plugin, pkg/scheduler/plugins/pdb, filters the
victims for this; Sluice's default configuration enables it). As Volcano's, the victims are
taken in turn while their budgets allow: a pod listed in a budget's ``disruptedPods`` is being
evicted already and spends nothing.

Unlike Volcano's: the filter has the last word on the victims, wherever the plugin sits in the
tiers (Volcano's votes in its tier, where an empty answer lets the next tier pick the victims
alone); the evictions this session has already decided spend their budgets too, so victims
picked on two nodes for one gang cannot add up to more than a budget allows; and the candidates
are taken in victim order, so the victims kept are those preempt and reclaim would evict
first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.task_info import TaskInfo, TaskStatus
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.api.disruption_budget import DisruptionBudget
    from scheduler.framework.session import Session


class PdbPlugin(Plugin):
    name = "pdb"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.budgets: list[DisruptionBudget] = list(ssn.disruption_budgets)
        self.releasing_at_open = {
            uid for job in ssn.jobs.values() for uid in job.index.get(TaskStatus.RELEASING, {})
        }
        self.evicted: dict[str, TaskInfo] = {}  # decided by this session, not undone
        if not self.budgets:
            return
        ssn.add_event_handler(self._placed, self._removed)
        if self.enabled("enablePreemptable") or self.enabled("enableReclaimable"):
            ssn.add_victim_limit_fn(self.victims)

    def _removed(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.RELEASING and task.uid not in self.releasing_at_open:
            self.evicted[task.uid] = task

    def _placed(self, task: TaskInfo) -> None:
        if task.uid in self.evicted and task.status != TaskStatus.RELEASING:
            del self.evicted[task.uid]  # the eviction was undone

    def victims(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        allowed = {id(b): b.allowed - self._spent(b) for b in self.budgets}
        kept = []
        for task in sorted(candidates, key=self.ssn.victim_order_key(preemptor), reverse=True):
            covering = [b for b in self._covering(task) if task.name not in b.disrupted]
            if all(allowed[id(b)] > 0 for b in covering):
                for budget in covering:
                    allowed[id(budget)] -= 1
                kept.append(task)
        return kept

    def _spent(self, budget: DisruptionBudget) -> int:
        return sum(
            1
            for task in self.evicted.values()
            if task.name not in budget.disrupted and budget.covers(task.namespace, _labels(task))
        )

    def _covering(self, task: TaskInfo) -> list[DisruptionBudget]:
        labels = _labels(task)
        return [b for b in self.budgets if b.covers(task.namespace, labels)]


def _labels(task: TaskInfo) -> dict[str, str]:
    return (task.pod.get("metadata") or {}).get("labels") or {}
