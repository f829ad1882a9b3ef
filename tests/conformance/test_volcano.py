"""Volcano's own scheduler test tables, run against Sluice (see ``runner.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conformance.runner import check, load_cases, run

CASES = load_cases()
README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_volcano_case(case):
    if case.skip:
        pytest.skip(f"{case.source}: {case.skip}")
    problems = check(case, run(case))
    assert not problems, f"{case.source} {case.id}:\n" + "\n".join(problems)


def test_every_difference_is_a_row_of_the_readme_table():
    table = README.read_text().split("## Differences from Volcano", 1)[-1]
    rows = set(re.findall(r"^\| \*\*(.+?)\*\* \|", table, flags=re.M))
    missing = sorted({c.difference for c in CASES if c.difference} - rows)
    assert not missing, f"README's differences table lacks: {missing}"
