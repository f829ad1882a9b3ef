"""What a template's variables and filters write, done in plain Python for tables built row by
row (History's cycles, the Autoscaler's events): each function returns what the template
wrote for it, and the tests compare them with the template engine's own rendering."""

from __future__ import annotations

import html
import math
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.template.defaultfilters import floatformat
from django.utils import timezone

_TENTH = Decimal("0.1")
# Past this, Decimal's default context (28 digits) could not hold a value and its tenth.
_FAST_LIMIT = 1e15


def text(value: object) -> str:
    """``{{ value }}`` of a value that is not marked safe: ``str`` escaped as Django's
    ``escape`` does (``html.escape`` with quotes), without its lazy-string wrapper."""
    return html.escape(str(value), quote=True)


def date_time(at: datetime | None) -> str:
    """``{{ at|date:"Y-m-d H:i:s" }}``: in the current time zone when aware, as the template
    engine localizes a date before its ``date`` filter; "" for None, as the filter."""
    if at is None:
        return ""
    if timezone.is_aware(at):
        at = timezone.localtime(at)
    return f"{at.year:04d}-{at.month:02d}-{at.day:02d} {at:%H:%M:%S}"


def one_decimal(value: float) -> str:
    """``{{ value|floatformat:1 }}``: Django rounds the decimal text of the float half up
    (``Decimal(str(value))``), which ``f"{value:.1f}"`` does not (12.25 -> "12.3", not "12.2")."""
    if not math.isfinite(value) or abs(value) >= _FAST_LIMIT:
        return str(floatformat(value, 1))
    rounded = Decimal(repr(float(value))).quantize(_TENTH, ROUND_HALF_UP)
    return format(rounded if rounded else rounded.copy_abs(), "f")  # never "-0.0"
