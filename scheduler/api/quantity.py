"""Kubernetes resource quantities, parsed into the integer units the engine computes with.

CPU is kept in millicores, memory-like resources in bytes, ``pods`` as a count and every other
(extended) resource in milli-units, as Volcano's ``Resource`` does, so ``nvidia.com/gpu: 1``
becomes 1000 and a GPU-sharing request of ``0.5`` becomes 500.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal

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

# apimachinery's resource.ParseQuantity (k8s.io/apimachinery pkg/api/resource/quantity.go):
# the expression its error quotes (which is looser than what it takes: its scanner takes "k",
# "-" and "." as zero), its errors' words, its suffixes. Its scanner, as a regular expression:
# a sign, digits, a point and digits, then suffix letters, a sign and digits; possessive, as
# the scanner never goes back (and so a long string is read in linear time, not quadratic).
_KUBE_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_SCAN = re.compile(r"([+-]?)([0-9]*+)(?:\.([0-9]*+))?([eEinumkKMGTP]*+[-+]?[0-9]*+)")
_ERR_FORMAT = f"quantities must match the regular expression '{_KUBE_FORMAT}'"
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"
_DECIMAL_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                     "E": 18}  # fmt: skip
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")
_BINARY_CAP = Decimal(MAX_UNITS)  # ParseQuantity caps a binary-suffixed value (8Ei) at 2^63-1
_NANO = Decimal("1e-9")
# Go's unicode.IsSpace: what Quantity.UnmarshalJSON's strings.TrimSpace strips.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


class QuantityError(ValueError):
    """A quantity that Kubernetes would reject, or one too large for Sluice to count, with the
    object and field it came from."""

    def __init__(self, obj: str, field: str, value: object, reason: str) -> None:
        self.obj, self.field, self.value = obj, field, value
        shown = repr(value)
        if len(shown) > 40:  # the message goes into events and conditions: keep it short
            shown = f"{shown[:32]}… ({len(shown)} characters)"
        super().__init__(f"{obj}: {field}: invalid quantity {shown}: {reason}")


class _Refused(ValueError):
    """ParseQuantity's error, in its words."""


def parse_quantity(value: object, *, obj: str, field: str) -> Decimal:
    """Parse any Kubernetes quantity form (``100m``, ``1.5``, ``2Gi``, ``500M``, ``1e3``, ``0.5Ki``)
    to the value kube-apiserver stores for it; negative values are refused.

    ``obj`` names the object (``pod default/web-1``) and ``field`` the path of the value
    (``spec.containers[0].resources.requests.cpu``) so the error says where to look.
    """
    quantity = quantity_value(value, obj=obj, field=field)
    if quantity < 0:
        raise QuantityError(obj, field, value, "must not be negative")
    return quantity


def quantity_value(value: object, *, obj: str, field: str) -> Decimal:
    """The signed value of a quantity as Quantity.UnmarshalJSON decodes it: a JSON string
    (spaces trimmed) or number, by ParseQuantity's rules; a QuantityError for anything it
    refuses, and for JSON null, true/false, NaN and infinities."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(obj, field, value, "expected a number or a quantity string")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(obj, field, value, "not a finite number")
        text = repr(value)  # 0.1, not the float's binary expansion 0.1000000000000000055…
    elif isinstance(value, str):
        text = value.strip(_GO_SPACE)
    else:
        raise QuantityError(obj, field, value, "expected a number or a quantity string")
    try:
        return _parse_text(text)
    except _Refused as exc:
        raise QuantityError(obj, field, value, str(exc)) from None


def kube_syntax_error(value: object) -> str:
    """Why kube-apiserver's decoder refuses ``value`` as a quantity (the API answers 400 Bad
    Request), in apimachinery's words; "" when it takes it. It takes any size: ``1e400`` and
    ``99999999999999999999999`` decode (and pass validation), so the bound is Sluice's own."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return ""  # JSON null is a zero quantity; a JSON number is parsed from its text
    if not isinstance(value, str):
        return _ERR_FORMAT
    try:
        _parse_text(value.strip(_GO_SPACE))
    except _Refused as exc:
        return str(exc)
    return ""


def _int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): None past an int64 (before Python's digit limit)."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19:
        return None
    parsed = -int(digits or "0") if text.startswith("-") else int(digits or "0")
    return parsed if -(2**63) <= parsed < 2**63 else None


def _wrap32(n: int) -> int:
    """An int32 conversion, as Go's wraps."""
    return (n + 2**31) % 2**32 - 2**31


def _parse_text(text: str) -> Decimal:
    """ParseQuantity(text), step by step as apimachinery takes it."""
    match = _SCAN.fullmatch(text) if text else None
    if match is None:
        raise _Refused(_ERR_FORMAT)
    sign, whole, point, suffix = match.groups()
    denom = point or ""
    num = whole.lstrip("0") or "0"
    if suffix in _DECIMAL_SUFFIXES:
        binary, exponent = False, _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        binary, exponent = True, _BINARY_SUFFIXES[suffix]
    elif _EXPONENT.fullmatch(suffix) and (parsed := _int64(suffix[1:])) is not None:
        binary, exponent = False, _wrap32(parsed)  # Go's int32(…) conversion wraps
    else:
        raise _Refused(_ERR_SUFFIX)
    negative = sign == "-"
    # The int64 fast path: at most 18 digits (15 less the suffix's for binary ones), its
    # int32 scale at or above nano, and the product inside an int64.
    if binary:
        fast = not denom and 15 - len(num) - exponent * 3 // 10 - 1 >= 0
        scale = 0
        mantissa = 1 << exponent
    else:
        fast = 18 - len(num) - len(denom) >= 0
        scale = _wrap32(exponent - len(denom))
        mantissa = 1
    if fast and scale >= -9:
        product = int(num + denom) * mantissa
        if product <= MAX_UNITS:
            return _signed(negative, Decimal(product).scaleb(scale, _EXACT))
    # The slow path: inf.Dec.SetString needs a digit ("k" is zero, "e-10" is refused).
    if not (whole or denom):
        raise _Refused(_ERR_NUMERIC)
    unscaled = Decimal(num + denom)
    context = Context(prec=len(num) + len(denom) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    if binary:
        amount = context.multiply(unscaled.scaleb(-len(denom), context), Decimal(mantissa))
    else:
        amount = unscaled.scaleb(-_wrap32(len(denom) + _wrap32(-exponent)), context)
    if amount and amount.as_tuple().exponent < -9:  # type: ignore[operator]
        amount = amount.quantize(_NANO, rounding=ROUND_UP, context=context)  # 1n at least
    if binary and amount > _BINARY_CAP:
        amount = _BINARY_CAP
    return _signed(negative, amount)


def _signed(negative: bool, amount: Decimal) -> Decimal:
    return amount.copy_negate() if negative and amount else amount  # no context: any exponent


_EXACT = Context(prec=40, Emax=MAX_EMAX, Emin=MIN_EMIN)


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
