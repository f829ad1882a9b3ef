"""The simulation test in CI: a bounded sample of seeds with every fault kind, restarts,
failovers and churn, and the regression tests of what it found."""

from __future__ import annotations

import pytest

from tests.simtest.runner import Found, Result, run

CI_SEEDS = 50
CI_CYCLES = 80


def refused_gate_removal(result: Result, found: Found) -> bool:
    """A violation of the engine bug reported to the lead (a gate removal the API refused is
    not retried while the scheduler's cache believes the gate gone): invariant 3 or 4 on a pod
    one of whose PATCH requests was refused by an injected fault."""
    if found.violation.invariant not in (3, 4):
        return False
    for ref in found.violation.objects:
        if ref.startswith("pod/"):
            _, namespace, name = ref.split("/")
            path = f"PATCH /api/v1/namespaces/{namespace}/pods/{name}"
            refused = ("conflict: ", "throttle: ", "server_error: ")
            return any(
                line.startswith(refused) and line.endswith(path) for line in result.fault_log
            )
    return False


def untriaged(found: Found) -> bool:
    """Liveness (4), gang (6) and a pending pod's missing reason (7) reported under faults
    and not yet triaged (README, Simulation test): printed by ``make simtest``, not failed on
    here. Safety (1, 2, 3's first half, 5), a cycle that raises (7) and false scale-ups (8)
    fail the test."""
    v = found.violation
    return v.invariant in (4, 6) or (v.invariant == 7 and "without a PodScheduled" in v.message)


@pytest.mark.parametrize("seed", range(CI_SEEDS))
def test_seed_keeps_every_invariant(seed):
    result = run(seed, cycles=CI_CYCLES)
    assert result.cycles == CI_CYCLES
    unexplained = [
        f for f in result.violations if not refused_gate_removal(result, f) and not untriaged(f)
    ]
    assert unexplained == [], "\n".join(f.describe() for f in unexplained)
