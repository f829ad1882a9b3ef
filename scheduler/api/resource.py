"""Resource vectors over named dimensions, in the engine units of ``quantity.py``.

A ``Resource`` is a thin wrapper over ``dict[str, int]``: queue and job accounting touch a few
dimensions at a time, so a dict is both simple and fast. Node-level hot paths use numpy
matrices instead (see ``framework/node_matrix.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduler.api.quantity import CPU, MEMORY, format_resource

# Volcano treats a scalar this small as zero when comparing (minResource).
_EPSILON = 0.1
INFINITE = float("inf")  # an unlimited dimension (Volcano's MaxFloat64 / MaxInt64)


class Resource:
    __slots__ = ("values",)

    def __init__(self, values: Mapping[str, float] | None = None) -> None:
        self.values: dict[str, float] = {k: v for k, v in (values or {}).items() if v}

    @classmethod
    def empty(cls) -> Resource:
        return cls()

    def clone(self) -> Resource:
        r = Resource.__new__(Resource)
        r.values = dict(self.values)
        return r

    def get(self, name: str) -> float:
        return self.values.get(name, 0)

    def names(self) -> set[str]:
        return set(self.values)

    def is_empty(self) -> bool:
        return all(v < _EPSILON for v in self.values.values())

    def add(self, other: Resource) -> Resource:
        vals = self.values
        for k, v in other.values.items():
            vals[k] = vals.get(k, 0) + v
        return self

    def sub(self, other: Resource) -> Resource:
        """Subtract, flooring at zero: accounting never goes negative (Volcano asserts instead)."""
        vals = self.values
        for k, v in other.values.items():
            left = vals.get(k, 0) - v
            if left > 0:
                vals[k] = left
            else:
                vals.pop(k, None)
        return self

    def multi(self, ratio: float) -> Resource:
        self.values = {k: v * ratio for k, v in self.values.items()}
        return self

    def less_equal(self, other: Resource, names: Iterable[str] | None = None) -> bool:
        """Every dimension (or only ``names``) of self fits within other."""
        keys = self.values.keys() if names is None else names
        return all(self.get(k) <= other.get(k) + _EPSILON for k in keys)

    def insufficient(self, limit: Resource, names: Iterable[str]) -> list[str]:
        """The dimensions among ``names`` where self exceeds ``limit``, sorted."""
        return sorted(k for k in names if self.get(k) > limit.get(k) + _EPSILON)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and self.values == other.values

    def __repr__(self) -> str:
        return f"Resource({self.values})"

    def to_dict(self) -> dict[str, float]:
        """The finite dimensions (an unlimited one, ``inf``, is left out: JSON has no
        infinity, and a report reads an absent capability as no limit)."""
        return {k: v for k, v in sorted(self.values.items()) if v != INFINITE}

    def describe(self) -> str:
        if not self.values:
            return "nothing"
        return ", ".join(
            f"unlimited {k}" if v == INFINITE else format_resource(k, v)
            for k, v in sorted(self.values.items())
        )


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """Per dimension, max(left - right, 0) — Volcano's ``ExceededPart``."""
    return Resource({k: v - right.get(k) for k, v in left.values.items() if v > right.get(k)})


def res_min(left: Resource, right: Resource) -> Resource:
    keys = left.names() | right.names()
    return Resource({k: min(left.get(k), right.get(k)) for k in keys})


def res_max(left: Resource, right: Resource) -> Resource:
    keys = left.names() | right.names()
    return Resource({k: max(left.get(k), right.get(k)) for k in keys})


def capped(capability: Resource | None, value: Resource) -> Resource:
    """``value`` limited by ``capability`` on the dimensions the capability names."""
    if capability is None:
        return value.clone()
    out = value.clone()
    for k, cap in capability.values.items():
        out.values[k] = min(out.get(k), cap)
    return Resource(out.values)


def share(allocated: Resource, deserved: Resource) -> float:
    """max over deserved's dimensions of allocated / deserved (Volcano's queue share)."""
    best = 0.0
    for k, d in deserved.values.items():
        if d < _EPSILON:
            continue  # Volcano's ResourceNames(): a zero dimension is not deserved
        best = max(best, allocated.get(k) / d)
    return best


__all__ = [
    "CPU",
    "INFINITE",
    "MEMORY",
    "Resource",
    "capped",
    "exceeded_part",
    "res_max",
    "res_min",
    "share",
]
