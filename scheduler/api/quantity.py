"""Kubernetes resource quantities, parsed into the integer units the engine computes with.

CPU is kept in millicores, memory-like resources in bytes, ``pods`` as a count and every other
(extended) resource in milli-units, as Volcano's ``Resource`` does, so ``nvidia.com/gpu: 1``
becomes 1000 and a GPU-sharing request of ``0.5`` becomes 500.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from kubernetes.utils import parse_quantity as _parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"

# Resources counted in bytes: the quantity's value is already in base units.
_BYTE_RESOURCES = frozenset({MEMORY, "ephemeral-storage", "storage"})


class QuantityError(ValueError):
    """A quantity that Kubernetes would reject, with the object and field it came from."""

    def __init__(self, obj: str, field: str, value: object, reason: str) -> None:
        self.obj, self.field, self.value = obj, field, value
        super().__init__(f"{obj}: {field}: invalid quantity {value!r}: {reason}")


def parse_quantity(value: object, *, obj: str, field: str) -> Decimal:
    """Parse any Kubernetes quantity form (``100m``, ``1.5``, ``2Gi``, ``500M``, ``1e3``, ``0.5Ki``).

    ``obj`` names the object (``pod default/web-1``) and ``field`` the path of the value
    (``spec.containers[0].resources.requests.cpu``) so the error says where to look.
    """
    if isinstance(value, bool) or value is None:
        raise QuantityError(obj, field, value, "expected a number or a quantity string")
    try:
        quantity = _parse_quantity(value)
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise QuantityError(obj, field, value, str(exc)) from None
    if not quantity.is_finite():
        raise QuantityError(obj, field, value, "not a finite number")
    if quantity < 0:
        raise QuantityError(obj, field, value, "must not be negative")
    return quantity


def resource_units(name: str, quantity: Decimal) -> int:
    """Convert a parsed quantity of resource ``name`` into the engine's integer unit.

    Fractions round up, as Kubernetes rounds requests up to the next representable unit.
    """
    if name == PODS or _is_byte_resource(name):
        return math.ceil(quantity)
    return math.ceil(quantity * 1000)


def parse_resource_list(rl: Mapping[str, object] | None, *, obj: str, field: str) -> dict[str, int]:
    """Parse a Kubernetes ResourceList (``{"cpu": "500m", "memory": "1Gi"}``) into engine units."""
    if not rl:
        return {}
    if not isinstance(rl, Mapping):
        raise QuantityError(obj, field, rl, "expected a map of resource name to quantity")
    return {
        name: resource_units(name, parse_quantity(value, obj=obj, field=f"{field}.{name}"))
        for name, value in rl.items()
    }


def _is_byte_resource(name: str) -> bool:
    return name in _BYTE_RESOURCES or name.startswith("hugepages-")


def format_resource(name: str, units: float) -> str:
    """Render engine units for people: ``3 CPU``, ``1.5Gi``, ``2 nvidia.com/gpu``."""
    if name == CPU:
        cores = units / 1000
        return f"{cores:g} CPU"
    if _is_byte_resource(name):
        for suffix, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units >= scale:
                return f"{units / scale:.3g}{suffix} {name}"
        return f"{int(units)} bytes {name}"
    if name == PODS:
        return f"{int(units)} pods"
    return f"{units / 1000:g} {name}"
