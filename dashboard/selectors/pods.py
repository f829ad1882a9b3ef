"""Pods as Sluice knows them: waiting now (live state) or as their latest transition left them."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator

from dashboard.models import PodState, PodTransition
from dashboard.selectors.live import live_summary, live_waiting_everywhere
from dashboard.selectors.reasons import risks_by_pod, wait_reason, wait_state

PAGE_SIZE = 50
STATES = ("Gated", "Unschedulable", "Pipelined", "Pending", "Binding", "Releasing")


@dataclass(frozen=True)
class PodFilter:
    state: str = ""
    queue: str = ""
    namespace: str = ""
    name: str = ""

    def matches(self, pod: dict) -> bool:
        return (
            (not self.state or pod["state"] == self.state)
            and (not self.queue or pod["queue"] == self.queue)
            and (not self.namespace or pod["namespace"] == self.namespace)
            and (not self.name or self.name.lower() in pod["name"].lower())
        )


def pod_list(*, filters: PodFilter, page: int | str = 1) -> Page:
    """Pods matching ``filters``, waiting pods first, sorted by namespace and name."""
    pods = [p for p in _known_pods() if filters.matches(p)]
    pods.sort(key=lambda p: (STATES.index(p["state"]) if p["state"] in STATES else 99,
                             p["namespace"], p["name"]))  # fmt: skip
    return Paginator(pods, PAGE_SIZE).get_page(page)


def pod_timeline(*, namespace: str, name: str) -> list[PodTransition]:
    """Every stored transition of the pod(s) called ``namespace/name``, oldest first."""
    return list(PodTransition.objects.filter(namespace=namespace, name=name).order_by("at", "id"))


def _known_pods() -> list[dict]:
    summary = live_summary() or {}
    risks = risks_by_pod(summary.get("risks", []))
    waiting = live_waiting_everywhere()
    waiting_uids = {p["uid"] for p in waiting}
    pods, gate_removed = [], set()
    for row in PodState.objects.order_by().values():
        if row["state"] == "Pending":
            gate_removed.add(row["uid"])
        if row["uid"] in waiting_uids:
            continue
        pods.append(row)
    for pod in waiting:
        reason = wait_reason(pod, risks.get(pod["uid"]), gate_removed=pod["uid"] in gate_removed)
        pods.append(
            {**pod, "state": wait_state(pod), "reason": reason, "node": pod.get("node", "")}
        )
    return pods
