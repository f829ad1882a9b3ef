"""A Cluster-Autoscaler-like simulation.

Every ``scan_interval`` (10 s, CA's ``--scan-interval``) it:

1. takes the pods CA calls unschedulable (``ca_is_unschedulable``), leaving out pods whose
   ``nominatedNodeName`` names an existing node (CA keeps them for that node);
2. drops the ones that fit on existing or still-provisioning nodes (CA's filter-out-schedulable,
   so one shortage never causes two scale-ups);
3. bin-packs the rest onto template nodes of each node group, first fit, capped at the group's
   max size, and expands the group whose option helps the most pods (ties: config order; CA's
   default expander is random, which would make runs irreproducible);
4. marks nodes of node groups unneeded when they run no pod other than DaemonSet or static
   pods, and deletes them after ``scale_down_unneeded`` (10 min) without going below min size.
"""

from __future__ import annotations

from simcluster.autoscaler.base import AutoscalerBase, busy_nodes
from simcluster.autoscaler.common import (
    PlacementSnapshot,
    ScalingGroup,
    SimNode,
    ca_is_unschedulable,
    ca_nominated_to_existing_node,
    can_host,
    constraints_of,
    group_fits,
    node_group_of,
)
from simcluster.autoscaler.records import Ledger, QueueBook
from simcluster.podutil import add, meta, pod_requests
from simcluster.store import Store


class ClusterAutoscaler(AutoscalerBase):
    name = "cluster-autoscaler"

    def __init__(
        self,
        store: Store,
        node_groups: list[ScalingGroup],
        ledger: Ledger | None = None,
        *,
        scan_interval: float = 10.0,
        scale_down_unneeded: float = 600.0,
    ) -> None:
        super().__init__(store, node_groups, ledger)
        self.scan_interval = scan_interval
        self.scale_down_unneeded = scale_down_unneeded
        self.unneeded_since: dict[str, float] = {}
        self._next_scan: float | None = None
        self._reported_no_fit: set[str] = set()

    def tick(self, now: float) -> None:
        self.create_due_nodes(now)
        if self._next_scan is not None and now < self._next_scan:
            return
        self._next_scan = now + self.scan_interval
        # The stored objects themselves, not copies: a scan only reads them (a write stores a
        # new dict), and copying every pod and node each scan cost most of a large cluster's
        # simulation time.
        nodes, pods = self.store.peek_all("nodes"), self.store.peek_all("pods")
        self.scale_up(now, nodes, pods)
        self.scale_down(now, self.store.peek_all("nodes"), pods)

    # -- scale-up ------------------------------------------------------------------------------

    def pending_pods(self, nodes: list[dict], pods: list[dict]) -> list[dict]:
        names = {meta(n)["name"] for n in nodes}
        candidates = [
            p
            for p in pods
            if ca_is_unschedulable(p) and not ca_nominated_to_existing_node(p, names)
        ]
        if not candidates:
            return []
        snapshot = PlacementSnapshot(nodes, pods, self.upcoming_nodes())
        return [p for p in candidates if snapshot.place(p) is None]

    def scale_up(self, now: float, nodes: list[dict], pods: list[dict]) -> None:
        pending = self.pending_pods(nodes, pods)
        if not pending:
            return
        options = {g.name: self._binpack(g, pending, nodes) for g in self.groups.values()}
        best = max(self.groups, key=lambda g: sum(len(p) for p in options[g]), default=None)
        if best is not None and options[best]:
            book = QueueBook(self.store)
            for bin_ in options[best]:
                self.launch(now, self.groups[best], bin_, book)
        # Pods another group could help wait for the next scan, as with CA's one expansion
        # per loop; only pods no option helps are told why.
        helpable = {meta(p)["uid"] for bins in options.values() for b in bins for p in b}
        for pod in pending:
            if meta(pod)["uid"] not in helpable:
                self._report_no_scale_up(now, pod)

    def _binpack(
        self, group: ScalingGroup, pending: list[dict], nodes: list[dict]
    ) -> list[list[dict]]:
        """First-fit the pods onto new template nodes; one list of pods per new node."""
        room = group.max_size - self.group_size(group.name, nodes)
        bins: list[tuple[SimNode, list[dict]]] = []
        for pod in pending:
            constraints, request = constraints_of(pod), pod_requests(pod)
            target = next((b for b in bins if can_host(constraints, request, b[0])), None)
            if target is None and len(bins) < room:
                fresh = SimNode(group.template(), dict(group.allocatable), upcoming=True)
                target = (fresh, []) if can_host(constraints, request, fresh) else None
                if target is not None:
                    bins.append(target)
            if target is not None:
                add(target[0].free, request, -1)
                target[1].append(pod)
        return [pods for _, pods in bins]

    def scale_up_message(self, group: ScalingGroup, node_name: str) -> str:
        nodes = self.store.list("nodes")[0]
        size = self.group_size(group.name, nodes)
        return (
            f"pod triggered scale-up: [{{{group.name} {size - 1}->{size} "
            f"(max: {group.max_size})}}] new node {node_name}"
        )

    def _report_no_scale_up(self, now: float, pod: dict) -> None:
        uid = meta(pod)["uid"]
        if uid in self._reported_no_fit:
            return  # Kubernetes would aggregate repeats into one event's count.
        self._reported_no_fit.add(uid)
        reasons = [
            f"{g.name}: max node group size reached"
            if group_fits(g, pod)
            else f"{g.name}: pod does not fit the template node"
            for g in self.groups.values()
        ]
        detail = "; ".join(reasons) or "no node groups"
        self.pod_event(now, pod, "NotTriggerScaleUp", f"pod didn't trigger scale-up: {detail}")

    # -- scale-down ----------------------------------------------------------------------------

    def scale_down(self, now: float, nodes: list[dict], pods: list[dict]) -> None:
        busy = busy_nodes(pods)
        sizes = {g: self.group_size(g, nodes) for g in self.groups}
        for node in nodes:
            name, group = meta(node)["name"], node_group_of(node)
            if group not in self.groups or name in busy:
                self.unneeded_since.pop(name, None)
                continue
            since = self.unneeded_since.setdefault(name, now)
            if (
                now - since >= self.scale_down_unneeded
                and sizes[group] > self.groups[group].min_size
            ):
                sizes[group] -= 1
                del self.unneeded_since[name]
                self.remove_node(now, node, f"empty for {now - since:.0f}s")
