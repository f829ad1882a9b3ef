"""Kubernetes resource quantities, parsed into the integer units the engine computes with.

CPU is kept in millicores, memory-like resources in bytes, ``pods`` as a count and every other
(extended) resource in milli-units, as Volcano's ``Resource`` does, so ``nvidia.com/gpu: 1``
becomes 1000 and a GPU-sharing request of ``0.5`` becomes 500.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal

from kubernetes.utils import parse_quantity as _parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"

# Resources counted in bytes: the quantity's value is already in base units.
_BYTE_RESOURCES = frozenset({MEMORY, "ephemeral-storage", "storage"})

# The most engine units one quantity (or a pod's total of one resource) may hold: an int64,
# what the node-capacity check's arrays and Kubernetes' own int64 accessors hold. More is not
# a request Sluice can count (``cpu: 1e400`` is 10^403 millicores), so it is an invalid one.
MAX_UNITS = 2**63 - 1

# apimachinery's resource.ParseQuantity: its splitting expression (and its error's words), the
# suffixes it knows, and an exponent that must parse as an int64. The Python client's parser
# is looser ("1K", "1_000", " 1" pass), so a quantity must first pass these rules.
_KUBE_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_FORMAT = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eEinumkKMGTP]*[-+]?[0-9]*)")
_SUFFIXES = frozenset(
    {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")
_BINARY_CAP = Decimal(MAX_UNITS)  # ParseQuantity caps a binary-suffixed value (8Ei) at 2^63-1


class QuantityError(ValueError):
    """A quantity that Kubernetes would reject, or one too large for Sluice to count, with the
    object and field it came from."""

    def __init__(self, obj: str, field: str, value: object, reason: str) -> None:
        self.obj, self.field, self.value = obj, field, value
        shown = repr(value)
        if len(shown) > 40:  # the message goes into events and conditions: keep it short
            shown = f"{shown[:32]}… ({len(shown)} characters)"
        super().__init__(f"{obj}: {field}: invalid quantity {shown}: {reason}")


def parse_quantity(value: object, *, obj: str, field: str) -> Decimal:
    """Parse any Kubernetes quantity form (``100m``, ``1.5``, ``2Gi``, ``500M``, ``1e3``, ``0.5Ki``).

    ``obj`` names the object (``pod default/web-1``) and ``field`` the path of the value
    (``spec.containers[0].resources.requests.cpu``) so the error says where to look.
    """
    if isinstance(value, bool) or value is None:
        raise QuantityError(obj, field, value, "expected a number or a quantity string")
    if isinstance(value, float):
        value_text = repr(value)  # 0.1, not the float's binary expansion 0.1000000000000000055…
    elif isinstance(value, int | str):
        value_text = str(value)
    else:
        raise QuantityError(obj, field, value, "expected a number or a quantity string")
    if isinstance(value, str):
        _check_kube_syntax(value, obj, field)
    try:
        quantity = _parse_quantity(value_text)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise QuantityError(obj, field, value, str(exc)) from None
    if not quantity.is_finite():
        raise QuantityError(obj, field, value, "not a finite number")
    if quantity < 0:
        raise QuantityError(obj, field, value, "must not be negative")
    if isinstance(value, str) and value.endswith("i") and quantity > _BINARY_CAP:
        quantity = _BINARY_CAP
    return quantity


def _check_kube_syntax(value: str, obj: str, field: str) -> None:
    reason = kube_syntax_error(value)
    if reason:
        raise QuantityError(obj, field, value, reason)


def kube_syntax_error(value: object) -> str:
    """Why kube-apiserver's decoder refuses ``value`` as a quantity (the API answers 400 Bad
    Request), in apimachinery's words; "" when it takes it. It takes any size: ``1e400`` and
    ``99999999999999999999999`` decode (and pass validation), so the bound is Sluice's own."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return ""  # JSON null is a zero quantity; a JSON number is parsed from its text
    match = _FORMAT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return f"quantities must match the regular expression '{_KUBE_FORMAT}'"
    suffix = match.group(2)
    if suffix in _SUFFIXES:
        return ""
    if not _EXPONENT.fullmatch(suffix):
        return "unable to parse quantity's suffix"
    digits = suffix[1:].lstrip("+-").lstrip("0")  # an exponent: ParseInt(…, 10, 64) must take it
    if len(digits) > 19 or not -(2**63) <= int(suffix[1:]) < 2**63:
        return "unable to parse quantity's suffix"
    return ""


def resource_units(name: str, quantity: Decimal) -> int:
    """Convert a parsed quantity of resource ``name`` into the engine's integer unit.

    Fractions round up, as Kubernetes rounds requests up to the next representable unit.
    Raises OverflowError past ``MAX_UNITS`` (checked on the decimal, so ``1e400`` never
    becomes a 400-digit integer); ``parse_resource_list`` names the field instead.
    """
    whole_units = name == PODS or _is_byte_resource(name)
    if quantity > (Decimal(MAX_UNITS) if whole_units else Decimal(MAX_UNITS) / 1000):
        raise OverflowError(f"more than {MAX_UNITS} {unit_name(name)}")
    if whole_units:
        return math.ceil(quantity)
    return math.ceil(quantity * 1000)


def unit_name(name: str) -> str:
    """The engine unit of resource ``name``, for messages."""
    if name == PODS:
        return "pods"
    if _is_byte_resource(name):
        return "bytes"
    return "millicores" if name == CPU else f"thousandths of {name}"


def parse_resource_list(rl: Mapping[str, object] | None, *, obj: str, field: str) -> dict[str, int]:
    """Parse a Kubernetes ResourceList (``{"cpu": "500m", "memory": "1Gi"}``) into engine units.

    A quantity Sluice cannot count (more than ``MAX_UNITS`` engine units) is a QuantityError.
    """
    if not rl:
        return {}
    if not isinstance(rl, Mapping):
        raise QuantityError(obj, field, rl, "expected a map of resource name to quantity")
    units = {}
    for name, value in rl.items():
        where = f"{field}.{name}"
        try:
            units[name] = resource_units(name, parse_quantity(value, obj=obj, field=where))
        except OverflowError as exc:
            raise QuantityError(obj, where, value, f"too large: {exc}") from None
    return units


def check_total(name: str, units: int, *, obj: str, field: str) -> int:
    """``units`` of ``name`` summed over several quantities, refused past ``MAX_UNITS``."""
    if units > MAX_UNITS:
        raise QuantityError(
            obj, field, units, f"too large: the sum is more than {MAX_UNITS} {unit_name(name)}"
        )
    return units


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
