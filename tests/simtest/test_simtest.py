"""The simulation test in CI: a bounded sample of seeds with every fault kind, restarts,
failovers and churn; every violation of any invariant fails it. The regression tests of what
it found are in ``test_regressions.py``."""

from __future__ import annotations

import pytest

from tests.simtest.runner import run

CI_SEEDS = 50
CI_CYCLES = 80


@pytest.mark.parametrize("seed", range(CI_SEEDS))
def test_seed_keeps_every_invariant(seed):
    result = run(seed, cycles=CI_CYCLES)
    assert result.cycles == CI_CYCLES
    assert result.violations == [], "\n".join(f.describe() for f in result.violations)
