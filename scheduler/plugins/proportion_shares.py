"""The proportion plugin's figures: each queue's deserved share by weighted water-filling, and
the comparisons Volcano makes on them, dimension by dimension as Volcano's ``Resource`` does
(``pkg/scheduler/plugins/proportion/proportion.go`` and ``pkg/scheduler/api/resource_info.go``
at Volcano commit ed72c7c815a9fd547a787134676f73d42e9d049c).

Volcano's ``Resource`` always carries CPU and memory and keeps other ("scalar") resources,
``pods`` among them, in a map; Sluice's is a dict where an absent dimension is zero. Where
Volcano treats an absent scalar differently (as infinite, or a missing map as "no scalars to
compare"), the functions below say so.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.quantity import CPU, MEMORY, PODS
from scheduler.api.resource import Resource, exceeded_part, res_max
from scheduler.plugins.queue_tree import QueueAttr

_MIN_RESOURCE = 0.1  # Volcano's minResource: smaller quantities count as zero
_ALWAYS = (CPU, MEMORY)  # the dimensions Volcano's Resource always has


@dataclass
class ProportionAttr(QueueAttr):
    """Volcano's proportion queueAttr: QueueAttr's figures, plus the queue's weight and the
    request of its jobs (allocated and pending tasks), which caps its deserved share."""

    weight: int = 1


def real_capability(total: Resource, total_guarantee: Resource, attr: ProportionAttr) -> Resource:
    """The cluster less every queue's guarantee, plus the queue's own, capped by its
    capability (an unset dimension of the capability does not cap)."""
    real = exceeded_part(total, total_guarantee).add(attr.guarantee)
    if attr.capability is None:
        return real
    return Resource({k: min(v, attr.capability.values.get(k, v)) for k, v in real.values.items()})


def fill_deserved(attrs: list[ProportionAttr], total: Resource) -> None:
    """Volcano's water-filling: round after round, the cluster's remaining resources are
    split among the queues not yet met, in proportion to their weights; each queue's deserved
    share is capped by its real capability and its request and raised to its guarantee. A
    queue is met when its request fits its deserved share, or its share stopped growing. It
    ends when nothing remains or nothing changed."""
    remaining, meet, first_round = total.clone(), set[str](), True
    for_scalars = any(k not in _ALWAYS for k in total.values)
    while True:
        total_weight = sum(a.weight for a in attrs if a.name not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in attrs:
            if attr.name in meet:
                continue
            old = attr.deserved
            deserved = old.clone().add(remaining.clone().multi(attr.weight / total_weight))
            deserved = _min_dims(deserved, attr.real_capability, absent_scalar_infinite=True)
            deserved = _min_dims(deserved, attr.request, absent_scalar_infinite=False)
            attr.deserved = res_max(deserved, attr.guarantee)
            attr.share = queue_share(attr.allocated, attr.deserved)
            if attr.request.less_equal(attr.deserved):
                meet.add(attr.name)
            elif _unchanged(attr, old, first_round and _has_scalars(for_scalars, attr)):
                meet.add(attr.name)  # its capability stops it
            increased.add(exceeded_part(attr.deserved, old))
            decreased.add(exceeded_part(old, attr.deserved))
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if _is_empty(remaining) or _same(remaining, old_remaining):
            break
        first_round = False


def _has_scalars(in_total: bool, attr: ProportionAttr) -> bool:
    return in_total or any(k not in _ALWAYS for k in attr.guarantee.values)


def _unchanged(attr: ProportionAttr, old: Resource, gained_scalar_keys: bool) -> bool:
    """Volcano compares the deserved share with the previous round's by deep equality: in
    the first round the previous one is an empty Resource without a scalar map, so a share
    that gained scalar dimensions (even at zero) is never equal to it."""
    return not gained_scalar_keys and _same(attr.deserved, old)


def _min_dims(value: Resource, limit: Resource, *, absent_scalar_infinite: bool) -> Resource:
    """Volcano's MinDimensionResource: per dimension of ``value``, the smaller of the two.
    CPU and memory absent from ``limit`` are zero; an absent scalar is zero or infinite."""
    out = {}
    for k, v in value.values.items():
        if k in limit.values:
            out[k] = min(v, limit.values[k])
        elif k in _ALWAYS or not absent_scalar_infinite:
            out[k] = min(v, 0)
        else:
            out[k] = v
    return Resource(out)


def _is_empty(r: Resource) -> bool:
    """Volcano's IsEmpty: every dimension below minResource, ``pods`` not counted."""
    return all(v < _MIN_RESOURCE for k, v in r.values.items() if k != PODS)


def _same(a: Resource, b: Resource) -> bool:
    return all(a.get(k) == b.get(k) for k in a.names() | b.names())


def queue_share(allocated: Resource, deserved: Resource) -> float:
    """Volcano's updateQueueAttrShare: the largest allocated/deserved ratio over the
    dimensions the deserved share has (at least minResource of); 0 for an empty share."""
    share = 0.0
    for k, d in deserved.values.items():
        if d >= _MIN_RESOURCE:
            share = max(share, allocated.get(k) / d)
    return share


def exceeds(used: Resource, limit: Resource, request: Resource) -> list[str]:
    """Volcano's LessEqualWithDimensionAndResourcesName: the dimensions ``request`` asks for
    (``pods`` aside) where ``used`` is above ``limit`` (an absent limit is zero), CPU and
    memory first as Volcano lists them, then the others sorted."""
    asked = [k for k in _ALWAYS if request.get(k) > 0]
    asked += sorted(
        k for k, v in request.values.items() if k not in _ALWAYS and k != PODS and v > 0
    )
    return [k for k in asked if used.get(k) > limit.get(k)]


def insufficient(prefix: str, verb: str, names: list[str]) -> str:
    """Volcano's util.FormatResourceNames: ``prefix: verb cpu, verb memory``."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)


__all__ = [
    "ProportionAttr",
    "exceeds",
    "fill_deserved",
    "insufficient",
    "queue_share",
    "real_capability",
]
