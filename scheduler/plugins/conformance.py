"""conformance: never evict the pods a cluster cannot run without
(``pkg/scheduler/plugins/conformance/conformance.go`` at Volcano commit
ed72c7c815a9fd547a787134676f73d42e9d049c).

A pod of priority class ``system-cluster-critical`` or ``system-node-critical``, or any pod of
the ``kube-system`` namespace, is never a victim of preempt or reclaim; every other candidate
is left to the other plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.task_info import TaskInfo
from scheduler.plugins.base import Plugin

if TYPE_CHECKING:
    from scheduler.framework.session import Session

# Kubernetes' scheduling.SystemClusterCritical, SystemNodeCritical and NamespaceSystem.
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_preemptable_fn(self, evictable)
        ssn.add_reclaimable_fn(self, evictable)


def evictable(evictor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    return [task for task in candidates if not critical(task)]


def critical(task: TaskInfo) -> bool:
    class_name = (task.pod.get("spec") or {}).get("priorityClassName") or ""
    return class_name in CRITICAL_PRIORITY_CLASSES or task.namespace == SYSTEM_NAMESPACE


__all__ = ["ConformancePlugin"]
