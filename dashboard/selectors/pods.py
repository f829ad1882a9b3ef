"""Pods as Sluice knows them: waiting now (live state) or as their latest transition left them."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator

from dashboard.models import PodTransition, TrackedPod
from dashboard.selectors.live import live_waiting_everywhere
from scheduler.api.report import PodState, WaitingPod

PAGE_SIZE = 50
# The order pods are listed in: waiting pods first.
STATES = (PodState.GATED, PodState.UNSCHEDULABLE, PodState.WAITING, PodState.PIPELINED, PodState.BINDING,
          PodState.RUNNING, PodState.TERMINATING, PodState.SUCCEEDED, PodState.FAILED, PodState.DELETED)  # fmt: skip
_ORDER = {state: i for i, state in enumerate(STATES)}


@dataclass
class PodRow:
    namespace: str
    name: str
    uid: str
    queue: str
    state: PodState
    node: str
    message: str  # the latest transition's words, or (for a waiting pod) the presenter's
    waiting: WaitingPod | None = None  # set when the pod waits at the latest cycle
    gate_removed: bool = False


@dataclass(frozen=True)
class PodFilter:
    state: str = ""
    queue: str = ""
    namespace: str = ""
    name: str = ""

    def matches(self, pod: PodRow) -> bool:
        return (
            (not self.state or pod.state.value == self.state)
            and (not self.queue or pod.queue == self.queue)
            and (not self.namespace or pod.namespace == self.namespace)
            and (not self.name or self.name.lower() in pod.name.lower())
        )


def pod_list(*, filters: PodFilter, page: int | str = 1) -> Page:
    """Pods matching ``filters``, waiting pods first, sorted by namespace and name."""
    pods = [p for p in _known_pods() if filters.matches(p)]
    pods.sort(key=lambda p: (_ORDER.get(p.state, 99), p.namespace, p.name))
    return Paginator(pods, PAGE_SIZE).get_page(page)


def pod_timeline(*, namespace: str, name: str) -> list[PodTransition]:
    """Every stored transition of the pod(s) called ``namespace/name``, oldest first."""
    return list(PodTransition.objects.filter(namespace=namespace, name=name).order_by("at", "id"))


def _known_pods() -> list[PodRow]:
    """Waiting pods, then the others' latest state rows."""
    waiting = live_waiting_everywhere()
    waiting_uids = {p.uid for p in waiting}
    lifted: set[str] = set()
    pods = []
    for row in TrackedPod.objects.order_by().values():
        if row["gate_removed"]:
            lifted.add(row["uid"])
        if row["uid"] not in waiting_uids:
            pods.append(
                PodRow(row["namespace"], row["name"], row["uid"], row["queue"],
                       PodState(row["state"]), row["node"], row["message"])
            )  # fmt: skip
    for pod in waiting:
        pods.append(
            PodRow(pod.namespace, pod.name, pod.uid, pod.queue, pod.state, pod.node,
                   pod.status.message, pod, pod.uid in lifted)
        )  # fmt: skip
    return pods
