"""Queue attributes for the capacity plugin, in Volcano's two modes (capacity.go at
ed72c7c815a9fd547a787134676f73d42e9d049c):

- flat (``enableHierarchy`` unset, Volcano's default; ``buildQueueAttrs``): every queue on its
  own; its real capability is the cluster's total less every queue's guarantee, plus its own,
  within its capability; its deserved share within its real capability, at least its
  guarantee. ``spec.parent`` is ignored.
- hierarchical (``enableHierarchy: true``; ``buildHierarchicalQueueAttrs`` and
  ``checkHierarchicalQueue``): a tree under ``root``, whose capability is unlimited unless set
  (the cluster's current size is the nodes' business — an autoscaler's — not a queue limit);
  a child takes its parent's capability on the dimensions it leaves unset, and its real
  capability is its parent's less its siblings' guarantees; root's guarantee and deserved are
  its children's sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.labels import ROOT_QUEUE
from scheduler.api.quantity import CPU, MEMORY
from scheduler.api.queue_info import QueueInfo, queue_problem
from scheduler.api.resource import INFINITE, Resource, exceeded_part, res_max, share


@dataclass
class QueueAttr:
    name: str
    parent: str | None
    guarantee: Resource
    deserved: Resource
    capability: Resource | None  # None: unlimited; absent dimensions are unlimited too
    open: bool = True
    is_leaf: bool = True
    chain: list[QueueAttr] = field(default_factory=list)  # self, then ancestors up to root
    children: list[QueueAttr] = field(default_factory=list)
    children_guarantee: Resource = field(default_factory=Resource)
    real_capability: Resource = field(default_factory=Resource)  # absent dimension: zero
    deserved_declared: frozenset[str] = frozenset()  # spec.deserved's names, zeros included
    allocated: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    # Its jobs' placed and pending tasks' requests (Volcano's attr.request, which proportion
    # caps deserved shares with and both plugins export as volcano_queue_request_*).
    request: Resource = field(default_factory=Resource)
    # Report only (capacity fills them at session close): gate reservations of the queue and
    # its descendants, and the part of inqueue they already hold.
    reserved: Resource = field(default_factory=Resource)
    inqueue_reserved: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    share: float = 0.0
    has_deserved: bool = False  # set with the share: best effort without one

    @property
    def over_deserved(self) -> bool:
        """Allocated above the deserved share on some resource: others may reclaim from it."""
        return not self.allocated.less_equal(self.deserved, self.deserved.names())

    @property
    def ancestors(self) -> list[QueueAttr]:
        """Parent first, root last."""
        return self.chain[1:]

    def update_share(self) -> None:
        """Volcano's updateQueueAttrShare: a queue without a deserved share is best effort,
        share 1 (after every queue still below its deserved share); otherwise the largest
        allocated / deserved ratio."""
        self.has_deserved = not self.deserved.is_empty()
        self.share = share(self.allocated, self.deserved) if self.has_deserved else 1.0


def build_flat(
    queues: dict[str, QueueInfo], total: Resource
) -> tuple[dict[str, QueueAttr], dict[str, str]]:
    """Volcano's ``buildQueueAttrs``: every queue on its own (``chain`` is the queue alone)."""
    total_guarantee = Resource()
    for q in queues.values():
        total_guarantee.add(q.guarantee)
    free = exceeded_part(total, total_guarantee)
    attrs: dict[str, QueueAttr] = {}
    for name in sorted(queues):
        q = queues[name]
        attr = _attr(q, None)
        attr.chain = [attr]
        attr.real_capability = _within(free.clone().add(q.guarantee), q)
        # MinDimensionResource(realCapability, Infinity): deserved within the real capability
        # on the dimensions both name, then at least the guarantee.
        deserved = Resource(
            {
                k: min(v, attr.real_capability.get(k))
                if k in (CPU, MEMORY) or k in attr.real_capability.values
                else v
                for k, v in attr.deserved.values.items()
            }
        )
        attr.deserved = res_max(deserved, attr.guarantee)
        attr.update_share()
        attrs[name] = attr
    return attrs, {}


def build_tree(
    queues: dict[str, QueueInfo], total: Resource
) -> tuple[dict[str, QueueAttr], dict[str, str]]:
    """Volcano's hierarchical attributes for every queue, parents before children, and the
    queues left out (a cycle or a missing parent) with the reason; their jobs are refused with
    that reason."""
    attrs: dict[str, QueueAttr] = {}
    order, problems = _parents_first(queues)
    for name in order:
        q = queues[name]
        parent = q.parent if name != ROOT_QUEUE else None
        attr = _attr(q, parent)
        if parent is not None:
            up = attrs[parent]
            up.is_leaf = False
            up.children.append(attr)
            attr.chain = [attr, *up.chain]
        else:
            attr.chain = [attr]
        attrs[name] = attr
    root = attrs.get(ROOT_QUEUE)
    if root is not None:
        root.capability = _root_capability(root.capability, total)
        root.real_capability = root.capability.clone()
        _check_children(root)
    for attr in attrs.values():
        attr.update_share()
    return attrs, problems


def _attr(q: QueueInfo, parent: str | None) -> QueueAttr:
    attr = QueueAttr(q.name, parent, q.guarantee.clone(), q.deserved.clone(), q.capability)
    attr.open = q.is_open()
    attr.deserved_declared = q.deserved_declared
    attr.capability = _declared_capability(q)
    return attr


def _declared_capability(q: QueueInfo) -> Resource | None:
    """The capability with its declared zeros kept (Resource drops zeros; here a zero scalar
    limits to zero, and an unset dimension does not limit)."""
    if q.capability is None:
        return None
    values = dict(q.capability.values)
    for name in q.capability_declared:
        values.setdefault(name, 0.0)
    out = Resource()
    out.values = values  # zeros kept on purpose
    return out


def _within(value: Resource, q: QueueInfo) -> Resource:
    """``value`` within the queue's capability (MinDimensionResource with Infinity: an unset
    dimension does not limit; CPU or memory at or below zero is unlimited)."""
    capability = _declared_capability(q)
    if capability is None:
        return value
    return Resource(
        {
            **value.values,
            **{k: min(value.get(k), v) for k, v in capability.values.items() if k in value.values},
        }
    )


def _root_capability(own: Resource | None, total: Resource) -> Resource:
    """Root is unlimited on CPU, memory and every resource the nodes have (Volcano's
    InfiniteResource plus the total's scalars) except where its capability says otherwise.
    Volcano takes a root capability that is set as it stands, so ``{nvidia.com/gpu: 8}`` would
    leave root (and every queue under it) no CPU; here an unset dimension stays unlimited."""
    out = Resource()
    out.values = {CPU: INFINITE, MEMORY: INFINITE, **dict.fromkeys(total.values, INFINITE)}
    if own is not None:
        out.values.update(own.values)
    return out


def _check_children(attr: QueueAttr) -> None:
    """Volcano's checkHierarchicalQueue, from ``attr`` down."""
    assert attr.capability is not None  # set for root, then for each child below
    total_guarantee, total_deserved = Resource(), Resource()
    for child in attr.children:
        child.deserved = res_max(child.deserved, child.guarantee)
        total_deserved.add(child.deserved)
        total_guarantee.add(child.guarantee)
        own = child.capability.values if child.capability is not None else {}
        inherited = dict(own)
        for k, v in attr.capability.values.items():
            if k in (CPU, MEMORY):
                if own.get(k, 0) <= 0:
                    inherited[k] = v
            else:
                inherited.setdefault(k, v)
        child.capability = Resource()
        child.capability.values = inherited
    attr.children_guarantee = total_guarantee
    if attr.name == ROOT_QUEUE:
        attr.guarantee, attr.deserved = total_guarantee, total_deserved
    for child in attr.children:
        real = exceeded_part(attr.real_capability, total_guarantee).add(child.guarantee)
        child.real_capability = Resource(
            {
                **real.values,
                **{
                    k: min(real.get(k), v)
                    for k, v in (child.capability.values if child.capability else {}).items()
                    if k in real.values
                },
            }
        )
    for child in attr.children:
        _check_children(child)


def _parents_first(queues: dict[str, QueueInfo]) -> tuple[list[str], dict[str, str]]:
    problems = {n: p for n in queues if (p := queue_problem(n, queues)) is not None}

    def depth(name: str) -> int:
        d = 0
        while name != ROOT_QUEUE:
            name, d = queues[name].parent or ROOT_QUEUE, d + 1
        return d

    valid = [n for n in queues if n not in problems]
    return sorted(valid, key=lambda n: (depth(n), n)), problems
