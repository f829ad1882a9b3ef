"""One current state per pod, reconciled from the cluster's own pods at every report.

A report lists every pod of ours in the cluster once: the waiting ones with why they wait
(``CycleReport.waiting``), the others as the scheduler's cache holds them (``CycleReport.pods``:
bound, running, terminating, finished). Each of its pods updates its ``TrackedPod`` (keyed by
the pod's UID); a tracked pod of the report's cluster that the report no longer lists is gone:
marked ``deleted`` once, with a ``deleted`` transition, and off the current lists.

History gets a row only for a real change: a pod's ``created`` transition (at its creation time,
to Gated when it was created with a scheduling gate), the scheduler's decisions (stored by
``dashboard.tasks.history``), and an ``observed`` transition when the cluster shows the pod in
another state than the decisions left it in (bound, running, terminating, succeeded, failed,
gate lifted by someone else, no longer nominated). Whether a pending pod waits for its queue
or for a node (Waiting / Unschedulable) is why it waits, not a change of the pod: its row
follows, its history does not.

A report from a scheduler that sends no ``pods`` (an older one) cannot say which pods are gone:
its pods are updated, none is marked deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple, Protocol, TypeVar

from django.db.models import Q, QuerySet

from dashboard.models import Cycle, PodTransition, TrackedPod
from scheduler.api.report import CycleReport, PodState, Transition, TransitionKind

# Pending sub-states that say why a pod waits, not what it is: moving between them is no event.
WHY_IT_WAITS = frozenset({PodState.WAITING, PodState.UNSCHEDULABLE})
CHUNK = 500  # ids per IN (...) clause
T = TypeVar("T")


class SeenPod(Protocol):
    """A pod as the report shows it: a ``WaitingPod``, a ``PodRecord`` or ``Moved``."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def queue(self) -> str: ...
    @property
    def state(self) -> PodState: ...
    @property
    def node(self) -> str: ...
    @property
    def created(self) -> int: ...  # seconds since the epoch, 0 when the report does not say


@dataclass
class Moved:
    """A pod the report names only in a decision (where the decision left it)."""

    namespace: str
    name: str
    queue: str
    state: PodState
    node: str
    created: int = 0


def reconcile_pods(
    cycle: Cycle, report: CycleReport, decisions: list[PodTransition], *, latest: bool = True
) -> None:
    """Bring the tracked pods of ``report.cluster`` to what ``report`` shows, and store the
    cycle's history in the order it happened: pods created, the ``decisions`` (unsaved rows
    of the report's transitions), what the cluster showed after them. ``latest`` is False for
    a report older than one already stored: its decisions are history, no current state."""
    lifted = {t.uid for t in report.transitions if t.kind is TransitionKind.GATE_REMOVED}
    if latest:
        _reconcile(cycle, report, lifted, decisions)
    else:
        PodTransition.objects.bulk_create(decisions, batch_size=1000)
    if lifted:  # once lifted, always lifted: a later change does not take it back
        for chunk in _chunks(sorted(lifted)):
            TrackedPod.objects.filter(uid__in=chunk).update(gate_removed=True)


def current_pods(cluster: str) -> QuerySet[TrackedPod]:
    """The pods of ``cluster`` that exist now (as the latest report of it said)."""
    return TrackedPod.objects.filter(cluster=cluster).exclude(state=PodState.DELETED.value)


def prunable_pods(cutoff: datetime, *, cluster: str | None) -> QuerySet[TrackedPod]:
    """Tracked pods older than ``cutoff`` that history may forget: gone, or of another cluster.
    ``cluster`` None (no report lists its pods): every one older than the cutoff."""
    old = TrackedPod.objects.filter(since__lt=cutoff)
    if cluster is None:
        return old
    return old.exclude(Q(cluster=cluster) & ~Q(state=PodState.DELETED.value))


class Row(NamedTuple):
    id: int
    uid: str
    cluster: str  # from here on, in the order of _FIELDS
    namespace: str
    name: str
    queue: str
    state: str
    node: str


def _reconcile(
    cycle: Cycle, report: CycleReport, lifted: set[str], decisions_made: list[PodTransition]
) -> None:
    at, cluster = cycle.started_at, report.cluster
    seen = _seen(report)
    acted = report.mode == "act"  # an observed decision changes nothing in the cluster
    decided: dict[str, list[Transition]] = {}
    for t in report.transitions:
        decided.setdefault(t.uid, []).append(t)
    rows = {r.uid: r for r in _rows(current_pods(cluster))}
    gone = [uid for uid in rows if uid not in seen] if report.pods is not None else []
    unknown = [uid for uid in seen if uid not in rows]
    for chunk in _chunks(unknown):  # another cluster's row, or one marked deleted: same pod
        rows.update({r.uid: r for r in _rows(TrackedPod.objects.filter(uid__in=chunk))})
    born: list[PodTransition] = []
    history: list[PodTransition] = []
    created: list[TrackedPod] = []
    updated: dict[tuple[tuple[str, object], ...], list[int]] = {}
    for uid, pod in seen.items():
        row = rows.get(uid)
        decisions = decided.get(uid, []) if acted else []
        values = (cluster, pod.namespace, pod.name, pod.queue, pod.state.value, pod.node)
        if row is not None and not decisions and row[2:] == values:
            continue  # most pods of most cycles: nothing changed
        before = PodState(row.state) if row is not None else None
        said = ""  # the latest words about the pod, for its row
        if row is None and pod.created:
            first = decisions[0].from_state if decisions else pod.state
            start = PodState.GATED if PodState.GATED in (first, pod.state) else PodState.WAITING
            born.append(_created(cycle, uid, pod, start))
            before, said = start, born[-1].message
        if decisions:
            before, said = decisions[-1].to_state, decisions[-1].message
        if before is not None and _changed(before, pod.state, acted):
            history.append(_observed(cycle, uid, pod, before))
            said = history[-1].message
        if row is None:
            since = datetime.fromtimestamp(pod.created, tz=UTC) if pod.created else at
            created.append(_tracked(uid, values, said, since, gate_removed=uid in lifted))
            created[-1].facts = report.pod_facts.get(uid)
            continue
        fields = [f for f, new, old in zip(_FIELDS, values, row[2:], strict=True) if new != old]
        if said:
            fields.append("message")
        if row.state != pod.state.value:
            fields.append("since")
        if fields:
            change = dict(zip(_FIELDS, values, strict=True))
            change.update(message=said, since=at)
            key = tuple((f, change[f]) for f in fields)  # pods changed alike: one UPDATE
            updated.setdefault(key, []).append(row.id)
    for uid in gone:
        row = rows[uid]
        history.append(PodTransition(
            cycle=cycle, at=at, namespace=row.namespace, name=row.name, uid=uid, queue=row.queue,
            kind=TransitionKind.DELETED.value, from_state=row.state,
            to_state=PodState.DELETED.value, node=row.node, message=GONE,
        ))  # fmt: skip
    TrackedPod.objects.bulk_create(created, batch_size=1000)
    _fill_facts(report.pod_facts, {p.uid for p in created})
    for change, ids in updated.items():  # by node, mostly (bulk_update's CASE is far slower)
        for chunk in _chunks(ids):
            TrackedPod.objects.filter(id__in=chunk).update(**dict(change))
    for chunk in _chunks(gone):
        TrackedPod.objects.filter(uid__in=chunk).update(
            state=PodState.DELETED.value, since=at, message=GONE
        )
    PodTransition.objects.bulk_create([*born, *decisions_made, *history], batch_size=1000)


def _fill_facts(facts: dict[str, dict], new: set[str]) -> None:
    """Tracked pods without facts that the report carries facts of (reported again by a
    scheduler that restarted, or first reported after its row was made): one UPDATE each,
    only for the rows that lack them."""
    known = [uid for uid in facts if uid not in new]
    for chunk in _chunks(known):
        for uid in TrackedPod.objects.filter(uid__in=chunk, facts__isnull=True).values_list(
            "uid", flat=True
        ):
            TrackedPod.objects.filter(uid=uid).update(facts=facts[uid])


GONE = "gone from the cluster"
_FIELDS = ("cluster", "namespace", "name", "queue", "state", "node")


def _tracked(
    uid: str, values: tuple[str, ...], message: str, since: datetime, *, gate_removed: bool = False
) -> TrackedPod:
    cluster, namespace, name, queue, state, node = values
    return TrackedPod(
        uid=uid, cluster=cluster, namespace=namespace, name=name, queue=queue, state=state,
        node=node, message=message, since=since, gate_removed=gate_removed,
    )  # fmt: skip


def _rows(pods: QuerySet[TrackedPod]) -> list[Row]:
    return [Row(*r) for r in pods.values_list(*Row._fields)]


def _seen(report: CycleReport) -> dict[str, SeenPod]:
    """Every pod the report shows, by UID: waiting, listed, or moved by a decision."""
    seen: dict[str, SeenPod] = {}
    for w in report.waiting:
        seen.setdefault(w.uid, w)
    for p in report.pods or ():
        seen.setdefault(p.uid, p)
    for t in reversed(report.transitions):  # a pod's last decision says where it went
        seen.setdefault(t.uid, Moved(t.namespace, t.name, t.queue, t.to_state, t.node))
    return seen


def _changed(before: PodState, now: PodState, acted: bool) -> bool:
    """A real change of the pod. In observe mode the pending states are what the scheduler
    would make them (a gate it would lift): only the cluster's own moves count."""
    if before == now or (before in WHY_IT_WAITS and now in WHY_IT_WAITS):
        return False
    return acted or not (before.pending and now.pending)


def _created(cycle: Cycle, uid: str, pod: SeenPod, born: PodState) -> PodTransition:
    gated = born is PodState.GATED
    return PodTransition(
        cycle=cycle, at=datetime.fromtimestamp(pod.created, tz=UTC), namespace=pod.namespace,
        name=pod.name, uid=uid, queue=pod.queue, kind=TransitionKind.CREATED.value,
        from_state="", to_state=born.value,
        message="created with a scheduling gate" if gated else "created",
    )  # fmt: skip


def _observed(cycle: Cycle, uid: str, pod: SeenPod, before: PodState) -> PodTransition:
    return PodTransition(
        cycle=cycle, at=cycle.started_at, namespace=pod.namespace, name=pod.name, uid=uid,
        queue=pod.queue, kind=TransitionKind.OBSERVED.value, from_state=before.value,
        to_state=pod.state.value, node=pod.node, message=_what_changed(before, pod),
    )  # fmt: skip


def _what_changed(before: PodState, pod: SeenPod) -> str:
    """The observed change in words, as kubectl would let one see it."""
    on = f" on {pod.node}" if pod.node else ""
    if pod.state is PodState.RUNNING:
        return f"bound to {pod.node}" if before is PodState.BINDING else f"running{on}"
    if pod.state is PodState.TERMINATING:
        return f"being deleted{on}"
    if pod.state in (PodState.SUCCEEDED, PodState.FAILED):
        return f"{pod.state.value}{on}"
    if pod.state is PodState.GATED:
        return "carries a scheduling gate again"
    if pod.state is PodState.PIPELINED:
        return f"nominated to {pod.node}" if pod.node else "nominated to a node"
    if pod.state is PodState.BINDING:
        return f"being bound to {pod.node}" if pod.node else "being bound"
    if before is PodState.GATED:
        return "its scheduling gates were removed"
    if before is PodState.BINDING:
        return "not bound: pending again"
    if before is PodState.PIPELINED:
        return "no longer nominated to a node"
    return f"{pod.state.label.lower()} again"


def _chunks(items: Iterable[T]) -> Iterable[list[T]]:
    listed = list(items)
    for start in range(0, len(listed), CHUNK):
        yield listed[start : start + CHUNK]
