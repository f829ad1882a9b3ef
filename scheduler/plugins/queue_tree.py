"""The queue hierarchy for the capacity plugin: root, parents, leaves, and per-queue figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.queue_info import QueueInfo, queue_problem
from scheduler.api.resource import Resource


@dataclass
class QueueAttr:
    name: str
    parent: str | None
    guarantee: Resource
    deserved: Resource
    capability: Resource | None
    open: bool = True
    is_leaf: bool = True
    chain: list[QueueAttr] = field(default_factory=list)  # self, then ancestors up to root
    children_guarantee: Resource = field(default_factory=Resource)
    real_capability: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    # Report only (capacity fills them at session close): gate reservations of the queue and
    # its descendants, and the part of inqueue they already hold.
    reserved: Resource = field(default_factory=Resource)
    inqueue_reserved: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    share: float = 0.0

    @property
    def over_deserved(self) -> bool:
        """Allocated above the deserved share on some resource: others may reclaim from it."""
        return not self.allocated.less_equal(self.deserved, self.deserved.names())


def build_tree(queues: dict[str, QueueInfo]) -> tuple[dict[str, QueueAttr], dict[str, str]]:
    """Attributes for every queue, parents before children, and the queues left out (a cycle
    or a missing parent) with the reason; their jobs are refused with that reason."""
    attrs: dict[str, QueueAttr] = {}
    order, problems = _parents_first(queues)
    for name in order:
        q = queues[name]
        parent = q.parent if name != ROOT_QUEUE else None
        attr = QueueAttr(name, parent, q.guarantee.clone(), q.deserved.clone(), q.capability)
        attr.open = q.is_open()
        if parent is not None:
            up = attrs[parent]
            up.is_leaf = False
            up.children_guarantee.add(attr.guarantee)
            attr.capability = _inherit(attr.capability, up.capability)
            attr.chain = [attr, *up.chain]
        else:
            attr.chain = [attr]
        attrs[name] = attr
    return attrs, problems


def _inherit(own: Resource | None, parent: Resource | None) -> Resource | None:
    """Dimensions a child leaves unset take the parent's capability."""
    if parent is None:
        return own
    merged = parent.clone()
    if own is not None:
        merged.values.update(own.values)
    return merged


def _parents_first(queues: dict[str, QueueInfo]) -> tuple[list[str], dict[str, str]]:
    problems = {n: p for n in queues if (p := queue_problem(n, queues)) is not None}

    def depth(name: str) -> int:
        d = 0
        while name != ROOT_QUEUE:
            name, d = queues[name].parent or ROOT_QUEUE, d + 1
        return d

    valid = [n for n in queues if n not in problems]
    return sorted(valid, key=lambda n: (depth(n), n)), problems
