"""Where ``--scenario`` finds a scenario: a built-in name, the Alibaba trace, or a file."""

from __future__ import annotations

from pathlib import Path

from simcluster.scenario import BUILTIN, SCENARIO_DIR, Scenario, ScenarioError, load_file
from simcluster.trace import DEMO_WINDOW, WHOLE_TRACE, load_openb

TRACES = ("openb", "openb-window")


def resolve(spec: str) -> Scenario:
    """``--scenario demo|empty|openb|openb-window|FILE``: ``openb`` is the whole Alibaba trace
    (1,523 nodes, 8,152 pods submitted at the start), ``openb-window`` 200 of its pods, 20x."""
    if spec == "openb":
        return load_openb(**WHOLE_TRACE)
    if spec == "openb-window":
        return load_openb(**DEMO_WINDOW)
    if spec in BUILTIN:
        return load_file(SCENARIO_DIR / f"{spec}.yaml")
    path = Path(spec)
    if not path.is_file():
        raise ScenarioError(
            f"{spec}: no such scenario (built-in: {', '.join(BUILTIN + TRACES)}) or file"
        )
    return load_file(path)
