"""A Karpenter-like simulation.

Pods pass ``karpenter_is_provisionable``. A pod newly seen provisionable opens (or extends) a
batch; the batch closes after ``batch_idle`` seconds without a new pod (1 s, Karpenter's
``BATCH_IDLE_DURATION``) or ``batch_max`` seconds after it opened (10 s,
``BATCH_MAX_DURATION``). Then the provisionable pods that fit on existing or in-flight nodes
are left alone, and the rest are packed, largest first, onto new nodes; each new node takes the
smallest node-group shape that fits the pod that opened it (a stand-in for "cheapest instance
type"). Empty nodes it launched are consolidated after ``consolidate_after`` seconds (None: off).
"""

from __future__ import annotations

from scheduler.api.labels import PROVISIONER_LABEL
from simcluster.autoscaler.base import AutoscalerBase, busy_nodes
from simcluster.autoscaler.common import (
    PlacementSnapshot,
    ScalingGroup,
    SimNode,
    can_host,
    constraints_of,
    karpenter_is_provisionable,
)
from simcluster.autoscaler.records import Ledger, QueueBook
from simcluster.podutil import add, meta, pod_requests
from simcluster.store import Store


class Karpenter(AutoscalerBase):
    name = "karpenter"

    def __init__(
        self,
        store: Store,
        node_groups: list[ScalingGroup],
        ledger: Ledger | None = None,
        *,
        batch_idle: float = 1.0,
        batch_max: float = 10.0,
        consolidate_after: float | None = 30.0,
    ) -> None:
        super().__init__(store, node_groups, ledger)
        self.batch_idle, self.batch_max = batch_idle, batch_max
        self.consolidate_after = consolidate_after
        self.batch_opened: float | None = None
        self._last_trigger = 0.0
        self._seen: set[str] = set()
        self._empty_since: dict[str, float] = {}
        self._reported_no_fit: set[str] = set()

    def tick(self, now: float) -> None:
        self.create_due_nodes(now)
        # The stored objects themselves, not copies (as ClusterAutoscaler.tick): only read.
        pods = self.store.peek_all("pods")
        provisionable = [p for p in pods if karpenter_is_provisionable(p)]
        uids = {meta(p)["uid"] for p in provisionable}
        if uids - self._seen:
            self.batch_opened = now if self.batch_opened is None else self.batch_opened
            self._last_trigger = now
        self._seen = uids
        if self.batch_opened is not None and (
            now - self._last_trigger >= self.batch_idle or now - self.batch_opened >= self.batch_max
        ):
            self.batch_opened = None
            self.provision(now, provisionable)
        if self.consolidate_after is not None:
            self.consolidate(now, self.store.peek_all("nodes"), self.store.peek_all("pods"), uids)

    def provision(self, now: float, provisionable: list[dict]) -> None:
        nodes, pods = self.store.peek_all("nodes"), self.store.peek_all("pods")
        snapshot = PlacementSnapshot(nodes, pods, self.upcoming_nodes())
        rest = [p for p in provisionable if snapshot.place(p) is None]
        rest.sort(key=lambda p: _size_key(pod_requests(p)), reverse=True)
        sizes = {g: self.group_size(g, nodes) for g in self.groups}
        claims: list[tuple[ScalingGroup, SimNode, list[dict]]] = []
        for pod in rest:
            constraints, request = constraints_of(pod), pod_requests(pod)
            claim = next((c for c in claims if can_host(constraints, request, c[1])), None)
            if claim is None:
                claim = self._new_claim(pod, sizes)
                if claim is None:
                    self._report_no_fit(now, pod)
                    continue
                claims.append(claim)
                sizes[claim[0].name] += 1
            add(claim[1].free, request, -1)
            claim[2].append(pod)
        book = QueueBook(self.store) if claims else None
        for group, _, claimed in claims:
            self.launch(now, group, claimed, book)

    def _new_claim(self, pod: dict, sizes: dict[str, int]):
        constraints, request = constraints_of(pod), pod_requests(pod)
        shapes = sorted(self.groups.values(), key=lambda g: _size_key(g.allocatable))
        for group in shapes:
            sim = SimNode(group.template(), dict(group.allocatable), upcoming=True)
            if sizes[group.name] < group.max_size and can_host(constraints, request, sim):
                return group, sim, []
        return None

    def scale_up_message(self, group: ScalingGroup, node_name: str) -> str:
        return f"Pod should schedule on: nodeclaim/{node_name} ({group.name})"

    def _report_no_fit(self, now: float, pod: dict) -> None:
        uid = meta(pod)["uid"]
        if uid not in self._reported_no_fit:
            self._reported_no_fit.add(uid)
            message = "Failed to schedule pod, incompatible with all node group shapes or limits"
            self.pod_event(now, pod, "FailedScheduling", message)

    def consolidate(
        self, now: float, nodes: list[dict], pods: list[dict], pending: set[str]
    ) -> None:
        """Remove empty nodes we launched, except those still awaited by pods they were
        launched for (Karpenter keeps re-nominating a node to pods it would take)."""
        busy = busy_nodes(pods)
        for node in nodes:
            name = meta(node)["name"]
            ours = (meta(node).get("labels") or {}).get(PROVISIONER_LABEL) == self.name
            record = self.ledger.by_node(name)
            awaited = record is not None and any(p.uid in pending for p in record.pods)
            if not ours or name in busy or awaited:
                self._empty_since.pop(name, None)
                continue
            since = self._empty_since.setdefault(name, now)
            if now - since >= self.consolidate_after:
                del self._empty_since[name]
                self.remove_node(now, node, f"empty for {now - since:.0f}s (consolidation)")


def _size_key(resources: dict[str, int]) -> tuple[int, int]:
    return resources.get("cpu", 0), resources.get("memory", 0)
