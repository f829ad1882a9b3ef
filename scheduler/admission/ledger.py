"""What was admitted since the capacity snapshot was taken, counted as used until it shows.

A snapshot is taken every refresh period; the check admits workloads against it meanwhile.
Without a ledger every admission sees the same free capacity, so two 3-CPU workloads are both
admitted into 4 free CPUs. ``AdmittedLedger`` remembers each admitted workload (by PodGroup
uid) and, per pod, what the snapshot will count for it once it is on a node
(``monitor.counted_demand``) and where: the node it is bound to, else the node the evaluator
placed it on. ``available(snapshot)`` is the snapshot minus all of that.

A pod leaves the ledger when a snapshot lists it on a node — such a snapshot was taken after
the pod was bound, so after its workload's admission, and counts it already; counting it
here too would count it twice — or when it is gone or finished. A workload leaves when it is
gone or back to Pending (unadmitted: evicted, or the check will see it again). The ledger
lives in memory as long as the scheduler (the ``Admission``); the check's plugin keeps it up
to date every cycle. A restarted scheduler, or another scheduler worker, does not have it:
until the next snapshot it counts only what that snapshot shows, as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.admission.monitor import CapacitySnapshot, counted_demand

PodNodes = Mapping[str, str]  # pod uid -> node name ("" while unbound), the pods that still live


@dataclass
class AdmittedPod:
    uid: str
    demand: dict[str, int]  # what the snapshot counts for it on a node, engine units
    node: str  # bound node, else the evaluator's placement; "" when neither is known


@dataclass
class AdmittedWorkload:
    uid: str
    admitted_at: datetime
    pods: dict[str, AdmittedPod] = field(default_factory=dict)  # by pod uid


class AdmittedLedger:
    """Workloads admitted against a snapshot that does not show them yet."""

    def __init__(self) -> None:
        self.workloads: dict[str, AdmittedWorkload] = {}
        self.revision = 0  # bumped on every change (a risk computed before it is stale)
        # (snapshot, revision, the snapshot minus the ledger), worked out once per revision
        self._available: tuple[CapacitySnapshot, int, CapacitySnapshot] | None = None
        self._owners: tuple[int, dict[str, str]] = (0, {})  # pod uid -> workload uid

    def __contains__(self, uid: object) -> bool:
        return uid in self.workloads

    def record(
        self,
        uid: str,
        pods: Sequence[Mapping[str, Any]],
        placement: Mapping[str, str] | None,
        now: datetime,
    ) -> None:
        """Workload ``uid`` was admitted at ``now`` with ``pods`` (its unbound pods) placed as
        ``placement`` says ("namespace/name" -> node); replaces what was recorded for it."""
        cached = self._available
        fresh = cached is not None and cached[1] == self.revision and uid not in self.workloads
        entry = AdmittedWorkload(uid, now)
        for pod in pods:
            meta = pod.get("metadata") or {}
            pod_uid = meta.get("uid") or ""
            demand = counted_demand(pod)
            if not pod_uid or not demand:
                continue  # nothing the snapshot would count for it
            key = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
            node = (pod.get("spec") or {}).get("nodeName") or (placement or {}).get(key, "")
            entry.pods[pod_uid] = AdmittedPod(pod_uid, demand, node)
        self.workloads.pop(uid, None)
        if entry.pods:
            self.workloads[uid] = entry
        self.revision += 1
        if fresh and cached is not None:  # within a cycle: take just this one off, cheaply
            used = _used([entry])
            self._available = (cached[0], self.revision, cached[2].minus(used))

    def reconcile(
        self, snapshot: CapacitySnapshot | None, admitted: Mapping[str, PodNodes]
    ) -> None:
        """Bring the ledger up to date: ``admitted`` maps each admitted workload still there to
        its live pods (uid -> node, "" while unbound); a workload not in it is dropped, so is
        a pod not in its map or that ``snapshot`` lists on a node. A pod bound since its
        admission is counted on its node from now on.

        A snapshot can only list a pod taken after the pod was bound, so after its workload
        was admitted: the uid is the test, not the snapshot's time (which comes from another
        process's clock)."""
        shown = snapshot.pod_uids() if snapshot is not None else frozenset()
        changed = False
        for uid in list(self.workloads):
            entry = self.workloads[uid]
            live = admitted.get(uid)
            if live is None:
                del self.workloads[uid]
                changed = True
                continue
            for pod_uid in list(entry.pods):
                pod = entry.pods[pod_uid]
                if pod_uid in shown or pod_uid not in live:
                    del entry.pods[pod_uid]
                    changed = True
                elif live[pod_uid] and live[pod_uid] != pod.node:
                    pod.node = live[pod_uid]
                    changed = True
            if not entry.pods:
                del self.workloads[uid]
        if changed:
            self.revision += 1

    def used(self) -> dict[str, dict[str, int]]:
        """What the ledger counts, per node."""
        return _used(self.workloads.values())

    def available(
        self, snapshot: CapacitySnapshot, without: Collection[str] = ()
    ) -> CapacitySnapshot:
        """``snapshot`` minus what the ledger counts, but the pods whose uids are ``without``
        (the ones being evaluated: a workload never competes with itself). The snapshot itself
        when the ledger counts nothing; worked out once per snapshot and revision."""
        cached = self._available
        if cached is not None and cached[0] is snapshot and cached[1] == self.revision:
            full = cached[2]
        else:
            used = self.used()
            full = snapshot.minus(used) if used else snapshot
            self._available = (snapshot, self.revision, full)
        if not without or not self.workloads:
            return full
        owners = self._pod_owners()
        back: dict[str, dict[str, int]] = {}
        for pod_uid in without:
            owner = owners.get(pod_uid)
            pod = self.workloads[owner].pods[pod_uid] if owner is not None else None
            if pod is not None and pod.node:
                total = back.setdefault(pod.node, {})
                for name, units in pod.demand.items():
                    total[name] = total.get(name, 0) - units
        return full.minus(back) if back else full

    def _pod_owners(self) -> dict[str, str]:
        if self._owners[0] != self.revision:
            owners = {p: e.uid for e in self.workloads.values() for p in e.pods}
            self._owners = (self.revision, owners)
        return self._owners[1]


def _used(entries: Iterable[AdmittedWorkload]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for entry in entries:
        for pod in entry.pods.values():
            if pod.node:
                total = out.setdefault(pod.node, {})
                for name, units in pod.demand.items():
                    total[name] = total.get(name, 0) + units
    return out
