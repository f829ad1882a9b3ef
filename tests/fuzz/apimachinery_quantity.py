"""A line-by-line port of apimachinery's ``resource.ParseQuantity`` and ``UnmarshalJSON``
(k8s.io/apimachinery pkg/api/resource/quantity.go and suffix.go), to hold Sluice's own parser
to: the fast scanner, the suffix tables, the int64 fast path with its int32 scale arithmetic,
inf.Dec's slow path (``SetString`` needs a digit), rounding up to 1n and the 2^63-1 cap of
binary-suffixed values. Written as the Go code is written, not as Sluice's parser is (a
regular expression): two routes to the same answers.
"""

from __future__ import annotations

from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal

ERR_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

# Go's unicode.IsSpace, what strings.TrimSpace strips.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)
DIGITS = "0123456789"
MAX_INT64 = 2**63 - 1


class GoError(Exception):
    pass


def wrap32(n: int) -> int:
    return (n + 2**31) % 2**32 - 2**31


def parse_quantity_string(s: str) -> tuple[bool, str, str, str, str]:
    positive, pos, end = True, 0, len(s)
    if pos < end:
        if s[0] == "-":
            positive, pos = False, pos + 1
        elif s[0] == "+":
            pos += 1
    i = pos
    while True:  # Zeroes
        if i >= end:
            return positive, "0", "0", "", ""
        if s[i] == "0":
            pos += 1
            i += 1
            continue
        break
    i = pos
    while True:  # Num
        if i >= end:
            return positive, s[0:end], s[pos:end], "", ""
        if s[i] in DIGITS:
            i += 1
            continue
        num, pos = s[pos:i], i
        break
    if not num:
        num = "0"
    denom = ""
    if pos < end and s[pos] == ".":
        pos += 1
        i = pos
        while True:  # Denom
            if i >= end:
                return positive, s[0:end], num, s[pos:end], ""
            if s[i] in DIGITS:
                i += 1
                continue
            denom, pos = s[pos:i], i
            break
    value = s[0:pos]
    suffix_start = pos
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, s[suffix_start:end]
        if s[i] not in "eEinumkKMGTP":
            pos = i
            break
        i += 1
    if pos < end and s[pos] in "-+":
        pos += 1
    i = pos
    while True:  # Suffix
        if i >= end:
            return positive, value, num, denom, s[suffix_start:end]
        if s[i] in DIGITS:
            i += 1
            continue
        break
    raise GoError(ERR_FORMAT)


DEC = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def go_parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64)."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or any(c not in DIGITS for c in body):
        return None
    n = Decimal(s)  # no digit limit, unlike int()
    return int(n) if -(2**63) <= n <= MAX_INT64 else None


def interpret(suffix: str) -> tuple[int, int, str]:
    if suffix in DEC:
        return 10, DEC[suffix], "DecimalSI"
    if suffix in BIN:
        return 2, BIN[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = go_parse_int64(suffix[1:])
        if parsed is None:
            raise GoError(ERR_SUFFIX)
        return 10, wrap32(parsed), "DecimalExponent"  # int32(parsed)
    raise GoError(ERR_SUFFIX)


def inf_set_string(value: str) -> tuple[bool, str, int]:
    """inf.Dec.SetString: (negative, unscaled digits, scale); a sign, digits and one point,
    with at least one digit."""
    body = value[1:] if value[:1] in "+-" else value
    if body.count(".") > 1 or not any(c in DIGITS for c in body):
        raise GoError(ERR_NUMERIC)
    whole, _, frac = body.partition(".")
    return value.startswith("-"), (whole + frac).lstrip("0") or "0", len(frac)


def go_parse_quantity(s: str) -> Decimal:
    """ParseQuantity(s): the value, or GoError with apimachinery's message."""
    if len(s) == 0:
        raise GoError(ERR_FORMAT)
    if s == "0":
        return Decimal(0)
    positive, value, num, denom, suf = parse_quantity_string(s)
    base, exponent, fmt = interpret(suf)
    precision, scale, mantissa = 0, 0, 1
    if fmt in ("DecimalExponent", "DecimalSI"):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    else:
        scale = 0
        if exponent >= 0 and len(denom) == 0:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    if precision >= 0:
        scale = wrap32(scale - len(denom))
        if scale >= -9:
            result = int(num + denom) * mantissa  # at most 18 digits: ParseInt takes them
            if -(2**63) <= result <= MAX_INT64:
                return Decimal((0 if positive else 1, _digits(str(result)), scale))
    # (a result past an int64 falls through to the slow path, as int64Multiply's overflow does)
    negative, unscaled, inf_scale = inf_set_string(value)
    ctx = Context(prec=len(unscaled) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    if base == 10:
        inf_scale = wrap32(inf_scale + wrap32(-exponent))
        amount = Decimal((0, _digits(unscaled), -inf_scale))
    else:
        amount = ctx.multiply(Decimal((0, _digits(unscaled), -inf_scale)), Decimal(2**exponent))
    if unscaled != "0" and amount.as_tuple().exponent < -9:  # type: ignore[operator]
        amount = amount.quantize(Decimal("1e-9"), rounding=ROUND_UP, context=ctx)
    if fmt == "BinarySI" and amount > MAX_INT64:
        amount = Decimal(MAX_INT64)
    return amount.copy_negate() if negative else amount


def _digits(n: str) -> tuple[int, ...]:
    return tuple(int(c) for c in n.lstrip("-"))


def go_unmarshal_json_string(s: str) -> Decimal:
    """Quantity.UnmarshalJSON of a JSON string: TrimSpace, then ParseQuantity."""
    return go_parse_quantity(s.strip(GO_SPACE))
