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
    """Pods matching ``filters``, waiting pods first, sorted by namespace and name; why each
    waiting pod waits is put in words for the page shown only (there may be 50,000)."""
    summary = live_summary() or {}
    pods, gate_removed = _known_pods()
    pods = [p for p in pods if filters.matches(p)]
    pods.sort(key=lambda p: (STATES.index(p["state"]) if p["state"] in STATES else 99,
                             p["namespace"], p["name"]))  # fmt: skip
    shown = Paginator(pods, PAGE_SIZE).get_page(page)
    risks = risks_by_pod(summary.get("risks", []))
    for pod in shown.object_list:
        if pod.pop("waiting", False):
            uid = pod["uid"]
            pod["reason"] = wait_reason(pod, risks.get(uid), gate_removed=uid in gate_removed)
    return shown


def pod_timeline(*, namespace: str, name: str) -> list[PodTransition]:
    """Every stored transition of the pod(s) called ``namespace/name``, oldest first."""
    return list(PodTransition.objects.filter(namespace=namespace, name=name).order_by("at", "id"))


def _known_pods() -> tuple[list[dict], set[str]]:
    """Waiting pods (marked ``waiting``) and the others' latest state rows; and the uids whose
    last move was a gate removal."""
    waiting = live_waiting_everywhere()
    waiting_uids = {p["uid"] for p in waiting}
    pods, gate_removed = [], set()
    for row in PodState.objects.order_by().values():
        if row["state"] == "Pending":
            gate_removed.add(row["uid"])
        if row["uid"] not in waiting_uids:
            pods.append(row)
    for pod in waiting:
        pods.append({**pod, "state": wait_state(pod), "node": pod.get("node", ""), "waiting": True})
    return pods, gate_removed
