"""Hypothesis settings and strategies shared by the fuzz suites.

Every suite is bounded and reproducible: ``derandomize=True`` draws the same examples on every
run (CI included), no example database is written, and each test has a number of examples
and a per-example deadline. The deadline is generous (the machine is shared): it catches an
input that makes a parser go quadratic, not a slow scheduler tick.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(max_examples: int, *, deadline_ms: int = 2000, **extra: Any) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=deadline_ms,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        **extra,
    )


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16)
)

# Any JSON value, small: what a field of the wrong type can be.
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

Path = tuple[str | int, ...]
_DELETE = object()


def replaced(document: Any, path: Path, value: Any) -> bool:
    """Put ``value`` at ``path`` inside ``document`` (deleting the key when value is
    ``DELETE``); False when the path no longer leads anywhere (an earlier replacement cut
    it)."""
    parent = document
    for key in path[:-1]:
        if not _has(parent, key):
            return False
        parent = parent[key]
    last = path[-1]
    if isinstance(parent, dict) and isinstance(last, str):
        if value is _DELETE:
            parent.pop(last, None)
        else:
            parent[last] = value
        return True
    if isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        if value is _DELETE:
            del parent[last]
        else:
            parent[last] = value
        return True
    return False


DELETE = _DELETE


def _has(container: Any, key: str | int) -> bool:
    if isinstance(container, dict):
        return isinstance(key, str) and key in container
    return isinstance(container, list) and isinstance(key, int) and key < len(container)


def replacements(paths: list[Path]) -> st.SearchStrategy[list[tuple[Path, Any]]]:
    """One to three (path, new value) pairs; the value may be ``DELETE``."""
    return st.lists(
        st.tuples(st.sampled_from(paths), st.just(DELETE) | json_values), min_size=1, max_size=3
    )


def dotted(path: Path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out
