"""Pods as the cluster has them: one current state per pod of the latest report's cluster
(``TrackedPod``, reconciled by ``dashboard.services.pod_states``), with why each waiting pod
waits from the live state, and each pod's timeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db.models import Case, IntegerField, QuerySet, Value, When

from dashboard.models import PodTransition, TrackedPod
from dashboard.selectors.live import live_waiting
from dashboard.services.pod_states import current_pods
from scheduler.api.report import PodState, WaitingPod

PAGE_SIZE = 50
# The order pods are listed in: waiting pods first.
STATES = (PodState.GATED, PodState.UNSCHEDULABLE, PodState.WAITING, PodState.PIPELINED, PodState.BINDING,
          PodState.RUNNING, PodState.TERMINATING, PodState.SUCCEEDED, PodState.FAILED, PodState.DELETED)  # fmt: skip
_ORDER = Case(
    *(When(state=state.value, then=Value(i)) for i, state in enumerate(STATES)),
    default=Value(len(STATES)),
    output_field=IntegerField(),
)


@dataclass
class PodRow:
    namespace: str
    name: str
    uid: str
    queue: str
    state: PodState
    node: str
    message: str  # the latest words about the pod, or (for a waiting pod) the presenter's
    waiting: WaitingPod | None = None  # set when the pod waits at the latest cycle
    gate_removed: bool = False


@dataclass(frozen=True)
class PodFilter:
    state: str = ""
    queue: str = ""
    namespace: str = ""
    name: str = ""


def pod_list(*, filters: PodFilter, page: int | str = 1, cluster: str | None) -> Page:
    """The pods of ``cluster`` that exist now (only the deleted ones when ``filters.state``
    asks for them), waiting pods first, then by namespace and name; None: no report yet."""
    if cluster is None:
        pods = TrackedPod.objects.none()
    elif filters.state == PodState.DELETED.value:
        pods = TrackedPod.objects.filter(cluster=cluster, state=filters.state)
    else:
        pods = current_pods(cluster)
        if filters.state:
            pods = pods.filter(state=filters.state)
    if filters.queue:
        pods = pods.filter(queue=filters.queue)
    if filters.namespace:
        pods = pods.filter(namespace=filters.namespace)
    if filters.name:
        pods = pods.filter(name__icontains=filters.name)
    pods = pods.order_by(_ORDER, "namespace", "name", "uid")
    result = Paginator(pods, PAGE_SIZE).get_page(page)
    result.object_list = _rows(list(result.object_list), live=True)
    return result


@dataclass
class PodDetail:
    """A pod page: the pod the name stands for now, its timeline, and the other pods that
    had the name (deleted and created again, or of another cluster)."""

    pod: PodRow | None  # None when no tracked pod has the name (only transitions do)
    current: bool  # the pod exists now in the latest report's cluster
    timeline: list[PodTransition]
    others: list[TrackedPod] = field(default_factory=list)
    since: datetime | None = None  # when it entered its state


def find_pod(*, namespace: str, name: str, cluster: str | None, uid: str = "") -> PodDetail:
    """The pod called ``namespace/name``: the one that exists now in ``cluster``, else the
    latest one to have the name (``uid`` picks another)."""
    rows = list(TrackedPod.objects.filter(namespace=namespace, name=name).order_by("-since", "-id"))
    chosen = _choose(rows, cluster, uid)
    if chosen is None:
        # No tracked pod (pruned, or history from before pods were tracked): its transitions.
        named = PodTransition.objects.filter(namespace=namespace, name=name)
        if uid:
            named = named.filter(uid=uid)
        last = named.order_by("-at", "-id").values_list("uid", flat=True).first()
        timeline = _timeline(named.filter(uid=last)) if last is not None else []
        return PodDetail(None, False, timeline)
    current = chosen.cluster == cluster and chosen.state != PodState.DELETED.value
    (row,) = _rows([chosen], live=current)
    others = [r for r in rows if r.uid != chosen.uid]
    timeline = _timeline(PodTransition.objects.filter(uid=chosen.uid))
    return PodDetail(row, current, timeline, others, chosen.since)


def _choose(rows: list[TrackedPod], cluster: str | None, uid: str) -> TrackedPod | None:
    if uid:
        return next((r for r in rows if r.uid == uid), None)
    here = [r for r in rows if r.cluster == cluster]
    live = [r for r in here if r.state != PodState.DELETED.value]
    return (live or here or rows or [None])[0]


def _timeline(transitions: QuerySet[PodTransition]) -> list[PodTransition]:
    return list(transitions.order_by("at", "id"))


def _rows(pods: list[TrackedPod], *, live: bool) -> list[PodRow]:
    """Rows for the pods shown; a waiting one gets why it waits from the latest cycle."""
    waiting: dict[str, WaitingPod] = {}
    if live:
        for queue in sorted({p.queue for p in pods if PodState(p.state).pending}):
            waiting.update({w.uid: w for w in live_waiting(queue) or []})
    rows = []
    for p in pods:
        pod = waiting.get(p.uid)
        rows.append(
            PodRow(p.namespace, p.name, p.uid, p.queue, PodState(p.state), p.node,
                   pod.status.message if pod else p.message, pod, p.gate_removed)
        )  # fmt: skip
    return rows
