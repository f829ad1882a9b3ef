"""``--faults`` on the command line (README "Simulation test": "a clear error naming the
field" for a bad fault configuration). Out-of-range and unknown keys name the field; a value
that is not a number does not."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize(
    ("text", "field"),
    [("conflict=abc", "conflict"), ("seed=1.5", "seed"), ("all=x", "all")],
)
def test_a_fault_value_that_is_not_a_number_names_its_field(text, field):
    """``manage.py simcluster --faults conflict=abc`` stops with "CommandError: could not
    convert string to float: 'abc'" — Python's message, naming neither ``--faults`` nor the
    key (``FaultConfig.from_text`` calls ``float()``/``int()`` before its own checks)."""
    with pytest.raises(CommandError) as caught:
        call_command("simcluster", "--port", "0", "--faults", text)
    message = str(caught.value)
    assert "--faults" in message and field in message, message
