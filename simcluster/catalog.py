"""Where ``--scenario`` finds a scenario: a built-in name, the Alibaba trace, or a file."""

from __future__ import annotations

from pathlib import Path

from simcluster.scenario import BUILTIN, SCENARIO_DIR, Scenario, ScenarioError, load_file
from simcluster.trace import DEMO_WINDOW, load_openb


def resolve(spec: str) -> Scenario:
    """``--scenario demo|empty|openb|FILE`` (``openb``: 200 pods of the Alibaba trace, 20x)."""
    if spec == "openb":
        return load_openb(**DEMO_WINDOW)
    if spec in BUILTIN:
        return load_file(SCENARIO_DIR / f"{spec}.yaml")
    path = Path(spec)
    if not path.is_file():
        raise ScenarioError(f"{spec}: no such scenario (built-in: {', '.join(BUILTIN)}) or file")
    return load_file(path)
