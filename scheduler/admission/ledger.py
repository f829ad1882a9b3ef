"""What was admitted since the capacity snapshot was taken, counted as used until it shows.

A snapshot is taken every refresh period; the check admits workloads against it meanwhile.
Without a ledger every admission sees the same free capacity, so two 3-CPU workloads are both
admitted into 4 free CPUs. ``AdmittedLedger`` remembers each admitted workload (by PodGroup
uid) as the room it was admitted for: one slot per pod, holding what the snapshot will count
for that pod once it is on a node (``monitor.counted_demand``) and where — the node it is
bound to, else the node the evaluator placed it on. ``available(snapshot)`` is the snapshot
minus all of that.

A slot is the workload's, not its pod's. A pod deleted while its workload is still admitted
and not running (PodGroup Inqueue) leaves its slot empty, and the next pod of the workload
that is not in a slot yet takes it up (the same name first: a controller recreating a pod, a
``kubectl replace --force``; else any: a Job's replacement has a new name) with its own
demand. A PodGroup created before its pods (``scheduler.admission.awaited``) is recorded with
empty slots shaped from its ``minResources``, which its pods take up as they are created. So
an admitted workload holds its room until its pods are on their nodes or it is gone: the
room a replacement pod needs is never given to another workload meanwhile.

A slot leaves the ledger when a snapshot lists its pod on a node — such a snapshot was taken
after the pod was bound, so after its workload's admission, and counts it already; counting it
here too would count it twice — or when its pod has finished, or is gone while the workload
is no longer Inqueue (it runs: what replaces its pod is scheduled as any new pod). A workload
leaves when it is gone or back to Pending (unadmitted: evicted, or the check will see it
again). The ledger lives in memory as long as the scheduler (the ``Admission``); the check's
plugin keeps it up to date every cycle, and takes up from the cluster every Inqueue workload
it does not hold (``plugin._take_up``): a restarted scheduler, or another scheduler worker,
counts what the one before it admitted, placed afresh where it is not bound yet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.admission.monitor import CapacitySnapshot, counted_demand


@dataclass(frozen=True)
class LivePod:
    """A live (not finished) pod of an admitted workload, as the session sees it."""

    uid: str
    key: str  # "namespace/name"
    node: str  # the node it is bound to, "" while unbound
    pod: Mapping[str, Any] | None = None  # its object: what a pod taking up a slot counts


@dataclass(frozen=True)
class AdmittedNow:
    """An admitted workload still there: its live pods, and whether it is still waiting to
    run (PodGroup Inqueue), so that a slot whose pod is gone is kept for its replacement."""

    pods: Sequence[LivePod]
    waiting: bool = True
    finished: Collection[str] = ()  # uids of its pods that succeeded or failed


@dataclass
class AdmittedPod:
    uid: str  # "" while the slot waits for a pod (deleted, or not created yet)
    demand: dict[str, int]  # what the snapshot counts for it on a node, engine units
    node: str  # bound node, else the evaluator's placement; "" when neither is known
    key: str = ""  # "namespace/name" of its pod, or "namespace/podgroup#i" of an awaited one


@dataclass
class AdmittedWorkload:
    uid: str
    admitted_at: datetime
    slots: list[AdmittedPod] = field(default_factory=list)

    @property
    def pods(self) -> dict[str, AdmittedPod]:
        """The slots a pod holds, by pod uid."""
        return {s.uid: s for s in self.slots if s.uid}


class AdmittedLedger:
    """Workloads admitted against a snapshot that does not show them yet."""

    def __init__(self) -> None:
        self.workloads: dict[str, AdmittedWorkload] = {}
        self.revision = 0  # bumped on every change (a risk computed before it is stale)
        # (snapshot, revision, the snapshot minus the ledger), worked out once per revision
        self._available: tuple[CapacitySnapshot, int, CapacitySnapshot] | None = None
        self._owners: tuple[int, dict[str, AdmittedPod]] = (0, {})  # pod uid -> its slot

    def __contains__(self, uid: object) -> bool:
        return uid in self.workloads

    def record(
        self,
        uid: str,
        pods: Sequence[Mapping[str, Any]],
        placement: Mapping[str, str] | None,
        now: datetime,
        awaited: Iterable[tuple[str, Mapping[str, int]]] = (),
    ) -> None:
        """Workload ``uid`` was admitted at ``now`` with ``pods`` (its unbound pods) and
        ``awaited`` (key, demand): the pods it still needs that do not exist yet, placed as
        ``placement`` says ("namespace/name" or an awaited key -> node); replaces what was
        recorded for it."""
        cached = self._available
        fresh = cached is not None and cached[1] == self.revision and uid not in self.workloads
        entry = AdmittedWorkload(uid, now)
        where = placement or {}
        for pod in pods:
            meta = pod.get("metadata") or {}
            key = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
            node = (pod.get("spec") or {}).get("nodeName") or where.get(key, "")
            entry.slots.append(AdmittedPod(meta.get("uid") or "", counted_demand(pod), node, key))
        for key, demand in awaited:
            entry.slots.append(AdmittedPod("", dict(demand), where.get(key, ""), key))
        self.workloads.pop(uid, None)
        if any(s.demand for s in entry.slots):  # else nothing a snapshot would count for it
            self.workloads[uid] = entry
        self.revision += 1
        if fresh and cached is not None:  # within a cycle: take just this one off, cheaply
            used = _used([entry])
            self._available = (cached[0], self.revision, cached[2].minus(used))

    def reconcile(
        self, snapshot: CapacitySnapshot | None, admitted: Mapping[str, AdmittedNow]
    ) -> None:
        """Bring the ledger up to date: ``admitted`` maps each admitted workload still there to
        its live pods; a workload not in it is dropped. A slot whose pod is gone is emptied
        while the workload waits to run, else dropped; a live pod in no slot takes up an empty
        one; a slot whose pod ``snapshot`` lists on a node is dropped. A pod bound since its
        admission is counted on its node from now on.

        A snapshot can only list a pod taken after the pod was bound, so after its workload
        was admitted: the uid is the test, not the snapshot's time (which comes from another
        process's clock)."""
        shown = snapshot.pod_uids() if snapshot is not None else frozenset()
        changed = False
        for uid in list(self.workloads):
            entry = self.workloads[uid]
            now = admitted.get(uid)
            if now is None:
                del self.workloads[uid]
                changed = True
                continue
            changed |= _follow(entry, now, shown)
            if not any(s.demand for s in entry.slots):
                del self.workloads[uid]
                changed = True
        if changed:
            self.revision += 1

    def used(self) -> dict[str, dict[str, int]]:
        """What the ledger counts, per node."""
        return _used(self.workloads.values())

    def available(
        self, snapshot: CapacitySnapshot, without: Collection[str] = (), workload: str = ""
    ) -> CapacitySnapshot:
        """``snapshot`` minus what the ledger counts, but the pods whose uids are ``without``
        and every slot of ``workload`` (the one being evaluated: a workload never competes
        with itself, nor with the room it holds for its pods to come). The snapshot itself
        when the ledger counts nothing; worked out once per snapshot and revision."""
        cached = self._available
        if cached is not None and cached[0] is snapshot and cached[1] == self.revision:
            full = cached[2]
        else:
            used = self.used()
            full = snapshot.minus(used) if used else snapshot
            self._available = (snapshot, self.revision, full)
        if not (without or workload) or not self.workloads:
            return full
        owners = self._pod_owners()
        own = self.workloads.get(workload)
        slots = {id(s): s for s in own.slots} if own is not None else {}
        for pod_uid in without:
            slot = owners.get(pod_uid)
            if slot is not None:
                slots[id(slot)] = slot
        back = _used([AdmittedWorkload(workload, datetime.min, list(slots.values()))])
        back = {node: {n: -u for n, u in units.items()} for node, units in back.items()}
        return full.minus(back) if back else full

    def _pod_owners(self) -> dict[str, AdmittedPod]:
        if self._owners[0] != self.revision:
            owners = {s.uid: s for e in self.workloads.values() for s in e.slots if s.uid}
            self._owners = (self.revision, owners)
        return self._owners[1]


def _used(entries: Iterable[AdmittedWorkload]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for entry in entries:
        for pod in entry.slots:
            if pod.node:
                total = out.setdefault(pod.node, {})
                for name, units in pod.demand.items():
                    total[name] = total.get(name, 0) + units
    return out


def _follow(entry: AdmittedWorkload, now: AdmittedNow, shown: Collection[str]) -> bool:
    """Bring one workload's slots up to date with its live pods; True if anything changed."""
    live = {p.uid: p for p in now.pods}
    held = {s.uid for s in entry.slots if s.uid}
    changed = False
    for slot in entry.slots:
        if not slot.uid or slot.uid in live or slot.uid in now.finished:
            continue
        slot.uid = ""  # its pod is gone: the slot waits for the pod that replaces it
        changed = True
    newcomers = sorted((p for p in now.pods if p.uid not in held), key=lambda p: p.key)
    for pod in newcomers:
        empty = [s for s in entry.slots if not s.uid]
        if not empty:
            break
        slot = next((s for s in empty if s.key == pod.key), empty[0])
        slot.uid, slot.key = pod.uid, pod.key
        slot.demand = _demand(pod, slot.demand)
        changed = True
    kept = []
    for slot in entry.slots:
        gone = slot.uid in now.finished or (not slot.uid and not now.waiting)
        if gone or slot.uid in shown:
            changed = True
            continue
        node = live[slot.uid].node if slot.uid else ""
        if node and node != slot.node:
            slot.node = node
            changed = True
        kept.append(slot)
    entry.slots = kept
    return changed


def _demand(pod: LivePod, before: dict[str, int]) -> dict[str, int]:
    """What the snapshot will count for a pod taking up a slot: its own demand; the slot's
    when its object is not at hand or does not read (it is reported elsewhere)."""
    if pod.pod is None:
        return before
    try:
        return counted_demand(pod.pod)
    except ValueError:
        return before
