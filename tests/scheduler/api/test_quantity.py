"""Quantities as kube-apiserver reads them, and bounded where Sluice counts them."""

from __future__ import annotations

import pytest

from scheduler.api.quantity import (
    MAX_UNITS,
    QuantityError,
    kube_syntax_error,
    parse_resource_list,
)

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def units(name: str, value: object) -> int:
    return parse_resource_list({name: value}, obj="pod ns/p", field="requests")[name]


@pytest.mark.parametrize(
    ("value", "cpu"),
    [("100m", 100), ("1.5", 1500), (".5", 500), ("1.", 1000), ("+2", 2000), ("1e3", 10**6),
     ("1E3", 10**6), ("2k", 2 * 10**6), (3, 3000), (0.1, 100), ("1E-400", 1), ("0", 0),
     # Quantity.UnmarshalJSON trims spaces (Go's unicode.IsSpace) before ParseQuantity
     (" 1", 1000), ("1\u3000", 1000),
     # ParseQuantity's scanner reads no digits as zero when its int64 fast path takes them
     ("k", 0), ("-", 0), (".", 0), ("Ti", 0),
     # Go's int32(exponent) wraps: 2^32 is 0
     ("1e4294967296", 1000),
     # rounded up to 1n before counting: past 28 digits too
     ("1.0000000000000000000000000000001", 1001)],
)  # fmt: skip
def test_what_kube_apiserver_parses_sluice_parses_alike(value, cpu):
    assert kube_syntax_error(value) == ""
    assert units("cpu", value) == cpu


@pytest.mark.parametrize(
    ("value", "error"),
    [("abc", FORMAT_ERROR), ("\x1c1", FORMAT_ERROR), ("1_000", FORMAT_ERROR), ("1e3Mi", FORMAT_ERROR),
     ("", FORMAT_ERROR), ("e-10", "unable to parse numeric part of quantity"),
     ("Pi", "unable to parse numeric part of quantity"),
     ("1K", "unable to parse quantity's suffix"), ("1ki", "unable to parse quantity's suffix"),
     ("1e", "unable to parse quantity's suffix"),
     ("1e99999999999999999999", "unable to parse quantity's suffix")],
)  # fmt: skip
def test_what_kube_apiserver_refuses_to_decode_sluice_refuses_in_its_words(value, error):
    assert kube_syntax_error(value) == error
    with pytest.raises(QuantityError, match="pod ns/p: requests.cpu: invalid quantity") as caught:
        units("cpu", value)
    assert str(caught.value).endswith(error)


@pytest.mark.parametrize("value", ["1e400", "99999999999999999999999", "9223372036854775808m"])
def test_kube_apiserver_takes_any_size_sluice_counts_up_to_an_int64(value):
    assert kube_syntax_error(value) == ""  # decodes, and pod validation sets no upper bound
    with pytest.raises(QuantityError, match=r"too large: more than 9223372036854775807 millicores"):
        units("cpu", value)


def test_the_largest_count_is_an_int64():
    assert units("cpu", "9223372036854775807m") == MAX_UNITS
    assert units("memory", "9223372036854775807") == MAX_UNITS


def test_a_binary_suffixed_quantity_is_capped_as_parse_quantity_caps_it():
    assert units("memory", "8Ei") == MAX_UNITS  # 2^63, stored by kube-apiserver as 2^63-1
    with pytest.raises(QuantityError, match="too large"):
        units("memory", "10E")  # 10^19: decimal suffixes are not capped


@pytest.mark.parametrize("value", [float("inf"), float("nan"), True, None, [1]])
def test_values_that_are_no_number(value):
    with pytest.raises(QuantityError):
        units("cpu", value)


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(QuantityError) as caught:
        units("cpu", "1" * 5000)
    assert len(str(caught.value)) < 200 and "(5002 characters)" in str(caught.value)
