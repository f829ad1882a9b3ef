"""Machinery both autoscalers share: launching nodes after a provision delay, removing them,
and publishing what happened as core/v1 events and a node annotation."""

from __future__ import annotations

import contextlib
import itertools
import logging
from dataclasses import dataclass

from simcluster.autoscaler.common import ScalingGroup, node_group_of
from simcluster.autoscaler.records import (
    Ledger,
    QueueBook,
    ScaleDown,
    ScaleUp,
    publish_annotation,
)
from simcluster.podutil import emit_event, is_daemon_or_mirror, is_finished, meta
from simcluster.store import AlreadyExists, NotFound, Store

log = logging.getLogger(__name__)


@dataclass
class Launch:
    ready_at: float
    group: ScalingGroup
    node: dict
    record: ScaleUp


class AutoscalerBase:
    name = "autoscaler"

    def __init__(
        self, store: Store, node_groups: list[ScalingGroup], ledger: Ledger | None
    ) -> None:
        self.store = store
        self.groups = {g.name: g for g in node_groups}
        self.ledger = ledger if ledger is not None else Ledger()
        self.launching: list[Launch] = []
        self._serial = itertools.count(1)

    # -- sizes ---------------------------------------------------------------------------------

    def group_size(self, group: str, nodes: list[dict]) -> int:
        existing = sum(node_group_of(n) == group for n in nodes)
        return existing + sum(launch.group.name == group for launch in self.launching)

    def upcoming_nodes(self) -> list[dict]:
        return [launch.node for launch in self.launching]

    # -- scale-up ------------------------------------------------------------------------------

    def launch(self, now: float, group: ScalingGroup, pods: list[dict], book: QueueBook) -> ScaleUp:
        """Decide on one new node for ``pods``; it appears after the group's provision delay."""
        taken = {meta(n)["name"] for n in self.store.list("nodes")[0]} | {
            meta(x.node)["name"] for x in self.launching
        }
        name = f"{group.name}-{next(self._serial)}"
        while name in taken:
            name = f"{group.name}-{next(self._serial)}"
        record = ScaleUp(now, self.name, group.name, name, [book.triggering(p) for p in pods])
        self.ledger.scale_ups.append(record)
        node = group.make_node(name, self.name)
        self.launching.append(Launch(now + group.provision_delay, group, node, record))
        message = self.scale_up_message(group, name)
        for pod in pods:
            self.pod_event(now, pod, "TriggeredScaleUp", message)
        return record

    def scale_up_message(self, group: ScalingGroup, node_name: str) -> str:
        return f"pod triggered scale-up: node {node_name} in group {group.name}"

    def create_due_nodes(self, now: float) -> None:
        due = [x for x in self.launching if x.ready_at <= now]
        self.launching = [x for x in self.launching if x.ready_at > now]
        for launch in due:
            try:
                node = self.store.create("nodes", _ready(launch.node))
            except AlreadyExists:
                log.warning("node %s already exists; scale-up dropped", meta(launch.node)["name"])
                continue
            launch.record.node_ready_at = now
            publish_annotation(self.store, launch.record)
            pods = ", ".join(f"{p.namespace}/{p.name}" for p in launch.record.pods)
            emit_event(
                self.store,
                now,
                node,
                kind="Node",
                reason="TriggeredScaleUp",
                message=f"node created by {self.name} for pod(s): {pods}",
                component=self.name,
            )

    # -- state (``--state``) ---------------------------------------------------------------------

    def launches_state(self) -> list[dict]:
        """Nodes still being provisioned, as plain data: the cloud goes on provisioning them
        while the simulated cluster restarts. ``scaleUp`` indexes the ledger's scale-ups."""
        index = {id(r): i for i, r in enumerate(self.ledger.scale_ups)}
        return [
            {
                "readyAt": x.ready_at,
                "group": x.group.name,
                "node": x.node,
                "scaleUp": index.get(id(x.record)),
            }
            for x in self.launching
        ]

    def resume_launches(self, launches: list[dict]) -> None:
        """Take up ``launches_state()`` (after the ledger is restored); a launch of a node group
        the scenario no longer has is dropped."""
        self.launching = []
        for item in launches:
            group = self.groups.get(item.get("group", ""))
            position = item.get("scaleUp")
            if group is None or position is None or position >= len(self.ledger.scale_ups):
                log.warning("dropping a restored launch of node group %s", item.get("group"))
                continue
            record = self.ledger.scale_ups[position]
            self.launching.append(Launch(float(item["readyAt"]), group, item["node"], record))

    # -- scale-down ----------------------------------------------------------------------------

    def remove_node(self, now: float, node: dict, reason: str) -> None:
        """Drain (only DaemonSet/static pods remain on an empty node) and delete the node."""
        name = meta(node)["name"]
        self.ledger.observe(self.store, now)  # charge wasted time up to the removal
        emit_event(
            self.store,
            now,
            node,
            kind="Node",
            reason="ScaleDown",
            message=f"node removed by {self.name}: {reason}",
            component=self.name,
        )
        for pod in self.store.list("pods")[0]:
            if (pod.get("spec") or {}).get("nodeName") == name:
                _delete_quietly(self.store, "pods", meta(pod)["namespace"], meta(pod)["name"])
        _delete_quietly(self.store, "nodes", "", name)
        record = self.ledger.by_node(name)
        if record is not None:
            record.node_removed_at = now
        self.ledger.scale_downs.append(
            ScaleDown(now, self.name, node_group_of(node) or "", name, reason)
        )

    def pod_event(self, now: float, pod: dict, reason: str, message: str) -> None:
        try:
            emit_event(
                self.store,
                now,
                pod,
                kind="Pod",
                reason=reason,
                message=message,
                component=self.name,
            )
        except Exception:  # an event is informational; never fail a scale-up over it
            log.exception("could not emit %s event", reason)


def busy_nodes(pods: list[dict]) -> set[str]:
    """Nodes running at least one pod that is not a DaemonSet or static pod."""
    return {
        (p.get("spec") or {}).get("nodeName")
        for p in pods
        if (p.get("spec") or {}).get("nodeName")
        and not is_finished(p)
        and not is_daemon_or_mirror(p)
    }


def _ready(node: dict) -> dict:
    node = {**node, "status": dict(node["status"])}
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    return node


def _delete_quietly(store: Store, kind: str, namespace: str, name: str) -> None:
    with contextlib.suppress(NotFound):
        store.delete(kind, namespace, name)
