"""Fuzz Sluice's quantity parser against a line-by-line port of apimachinery's.

Whatever the string, Sluice decodes it as kube-apiserver's Quantity.UnmarshalJSON does (the
same value, or the same error in the same words), never raises anything but QuantityError,
counts what it takes in Kubernetes' units (rounded up) up to an int64 and no further, and
every way of writing a value reads back as that value.
"""

from __future__ import annotations

import math
import time
from decimal import Context, Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from scheduler.api.quantity import (
    MAX_UNITS,
    QuantityError,
    kube_syntax_error,
    parse_quantity,
    parse_resource_list,
    resource_units,
)
from tests.fuzz.apimachinery_quantity import GO_SPACE, GoError, go_unmarshal_json_string
from tests.fuzz.strategies import fuzz_settings

QUANTITY_CHARS = "0123456789.+-eEinumkKMGTP " + "\t\xa0\u3000\x1c"
# Near the grammar: what a person (or a bug) would write.
near_quantities = st.from_regex(
    r"\s?[+-]?[0-9]{0,22}(\.[0-9]{0,12})?([eEinumkKMGTP]{0,2}[-+]?[0-9]{0,21})?\s?",
    fullmatch=True,
)
any_quantity_text = (
    near_quantities | st.text(alphabet=QUANTITY_CHARS, max_size=30) | st.text(max_size=30)
)
EXAMPLES = [
    "k", "-", ".", "+.", "e3", "e-10", "Pi", "Ei", "Ti", "8Ei", "9Ei", "1e4294967296",
    "1e-2147483648", "1.5e-2147483648", "0.0000000001", " 1", "1\u3000", "\x1c1", "1E5",
    "1.G", "1e", "1ki", "1K", "10E", "-1Gi", "-0", "0.5Ki", "1e" + "0" * 5000 + "1",
    "1" * 5000, "1" * 5000 + "e-5000", "0." + "0" * 40 + "1", "999999999999999Ki",
    "9223372036854775807", "9223372036854775807m", "9223372036854775.808",
]  # fmt: skip


def go(text: str) -> Decimal | str:
    try:
        return go_unmarshal_json_string(text)
    except GoError as exc:
        return str(exc)


def expected_units(name: str, value: Decimal) -> int | None:
    """Kubernetes' Value()/MilliValue(): rounded up; None past an int64."""
    per_unit = 1 if name == "memory" else 1000
    if value > Decimal(MAX_UNITS) / per_unit:
        return None
    return math.ceil(value * per_unit)


def _examples(test):
    for text in EXAMPLES:
        test = example(text)(test)
    return test


@fuzz_settings(600)
@given(any_quantity_text)
@_examples
def test_sluice_decodes_a_quantity_as_kube_apiserver_does(text):
    reference = go(text)
    error = kube_syntax_error(text)
    if isinstance(reference, str):
        assert error == reference, (text, reference)
        with pytest.raises(QuantityError, match="invalid quantity") as caught:
            parse_quantity(text, obj="pod ns/p", field="cpu")
        assert str(caught.value).endswith(reference)
        return
    assert error == "", (text, reference)
    if reference < 0:
        with pytest.raises(QuantityError, match="must not be negative"):
            parse_quantity(text, obj="pod ns/p", field="cpu")
        return
    value = parse_quantity(text, obj="pod ns/p", field="cpu")
    assert value == reference, text
    for name in ("cpu", "memory", "nvidia.com/gpu"):
        units = expected_units(name, reference)
        if units is None:
            with pytest.raises(OverflowError):
                resource_units(name, value)
        else:
            assert resource_units(name, value) == units, (text, name)


@fuzz_settings(500)
@given(
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "hugepages-2Mi"]),
        any_quantity_text
        | st.integers()
        | st.floats()
        | st.none()
        | st.booleans()
        | st.lists(st.integers(), max_size=2),
        max_size=4,
    )
)
def test_a_resource_list_reads_or_names_the_field_never_crashes(resources):
    try:
        units = parse_resource_list(resources, obj="pod ns/p", field="spec.overhead")
    except QuantityError as exc:
        assert exc.field.startswith("spec.overhead.") and exc.obj == "pod ns/p"
        assert str(exc).startswith(f"pod ns/p: {exc.field}: invalid quantity ")
        return
    assert all(0 <= u <= MAX_UNITS for u in units.values())


@fuzz_settings(500)
@given(st.integers(min_value=0, max_value=MAX_UNITS), st.data())
def test_every_way_of_writing_a_value_reads_back_as_it(nanos, data):
    value = Decimal(nanos).scaleb(-9)
    suffixes = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
    suffix = data.draw(st.sampled_from([*suffixes, "E", "Ki", "Mi", "Gi", "e", "e+"]))
    if suffix in suffixes or suffix == "E":
        scaled = value.scaleb(-(18 if suffix == "E" else suffixes[suffix]))
        text = f"{scaled:f}{suffix}"
    elif suffix.endswith("i"):
        power = {"Ki": 10, "Mi": 20, "Gi": 30}[suffix]
        scaled = Context(prec=200).divide(value, 2**power)  # exact: 1/2^n ends
        text = f"{scaled:f}{suffix}"
    else:
        exponent = data.draw(st.integers(min_value=-30, max_value=30))
        shown = f"{exponent:+d}" if suffix == "e+" else str(exponent)
        text = f"{value.scaleb(-exponent):f}{suffix[0]}{shown}"
    assert go(text) == value, text
    assert parse_quantity(text, obj="pod ns/p", field="cpu") == value, text
    # and back: the value written plainly reads as itself
    plain = f"{value:f}"
    assert parse_quantity(plain, obj="pod ns/p", field="cpu") == value


@fuzz_settings(500)
@given(st.integers() | st.floats(allow_nan=True, allow_infinity=True))
@example(10**30)
@example(1e308)
@example(-0.0)
@example(5e-324)
def test_a_json_number_reads_as_its_text_does(number):
    try:
        value = parse_quantity(number, obj="pod ns/p", field="cpu")
    except QuantityError as exc:
        assert number < 0 or not math.isfinite(number), exc
        return
    text = repr(number) if isinstance(number, float) else str(number)
    assert value == go(text)
    assert kube_syntax_error(number) == ""


def test_json_decoding_trims_what_go_calls_space_and_only_that():
    for space in GO_SPACE:
        assert kube_syntax_error(f"{space}1{space}") == ""
    assert kube_syntax_error("\x1c1") != ""  # Python calls it space; Go does not


@pytest.mark.parametrize(
    "text",
    ["1" * 3_000_000 + "x", "1." + "1" * 3_000_000 + "k1x", "e" * 3_000_000 + "1x"],
)
def test_a_body_sized_string_is_read_in_linear_time(text):
    """3 MB, the most kube-apiserver takes in a request: a scan that went back over the
    digits (quadratic) would take hours here."""
    started = time.monotonic()
    assert kube_syntax_error(text) != ""
    assert time.monotonic() - started < 5
