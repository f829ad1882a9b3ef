"""The History page's table of cycles, each row built in Python.

Through the template language a row cost about 60 us (a date filter alone 17 us, a
floatformat 5 us, a dozen variable lookups and ``if`` tags), 3 ms of the page's CPU for 50
rows on the openb run. Here each row is one string with the markup the template wrote, each
part written as the template wrote it (``dashboard.presenters.markup``); the tests compare it
with the template's rendering.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.utils.safestring import SafeString, mark_safe

from dashboard.presenters.markup import date_time, one_decimal, text
from dashboard.presenters.transitions import history_lines, pod_url_parts

if TYPE_CHECKING:
    from dashboard.models import Cycle
    from dashboard.selectors.cycles import CycleTransitions

# Between rows, what the template wrote around each one (its indentation in <tbody>).
_BEFORE_ROW, _AFTER_ROW = "\n          ", "\n        "


def cycle_row(
    cycle: Cycle, transitions: CycleTransitions | None, url: tuple[str, str, str] | None = None
) -> str:
    """One ``<tr>`` of the table: start, duration, mode, decisions (the cycle's first
    transitions, and how many more, in a ``<details>``) and the cycle's error. ``url``:
    ``pod_url_parts()``, made once for the page."""
    if transitions:
        shown = history_lines(transitions.shown, url)
        lines = "".join(f"<li>{line}</li>" for line in shown)
        if transitions.more:
            lines += (
                f"<li>… and {transitions.more} more in this cycle (each pod's page has its "
                "own)</li>"
            )
        decisions = f"<details><summary>{cycle.decisions}</summary><ul>{lines}</ul></details>"
    else:
        decisions = "0"
    error = ""
    if cycle.error:
        failed = "<strong>Cycle failed:</strong> " if cycle.failed else ""
        error = f'<p class="error">{failed}{text(cycle.error)}</p>'
    return (
        f"<tr><td>{date_time(cycle.started_at)}</td><td>{one_decimal(cycle.duration_ms)} ms</td>"
        f"<td>{text(cycle.mode)}</td>\n            <td>{decisions}\n              {error}</td></tr>"
    )


def cycle_rows(cycles: Iterable[Cycle], transitions: dict[int, CycleTransitions]) -> SafeString:
    """The rows of the History page's table, with the whitespace the template put around
    each; every part that comes from the database is escaped."""
    url = pod_url_parts()
    rows = (cycle_row(c, transitions.get(c.id), url) for c in cycles)
    # cycle_row escapes every part it did not write itself
    return mark_safe("".join(f"{_BEFORE_ROW}{row}{_AFTER_ROW}" for row in rows))  # noqa: S308
