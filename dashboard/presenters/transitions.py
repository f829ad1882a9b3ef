"""A cycle's transitions as the History page lists them, one line each, built in Python.

A page of 50 cycles shows up to 250 of them; through the template language each line cost
about 70 us (a URL reversed, three choice labels, a dozen escaped lookups), 18 ms of the
page's 25 ms of CPU on the openb run. Here a line is one string, each part escaped as
Django's ``escape`` does (``html.escape``, quotes too), the pod's URL made from the URL
pattern's prefix as ``reverse`` would make it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from dashboard.models import POD_STATES, TRANSITION_KINDS, PodTransition

if TYPE_CHECKING:
    from dashboard.selectors.cycles import ShownTransition

KIND_LABELS = dict(TRANSITION_KINDS)
STATE_LABELS = dict(POD_STATES)
# What ``reverse`` leaves unquoted in a path (django.urls.resolvers: RFC 3986 sub-delims and
# "/~:@"); a ``str`` path converter never matches "/", so "/" is quoted here.
_SAFE = "!$&'()*+,;=~:@"


def _e(text: str) -> str:
    """django.utils.html.escape without its lazy-string wrapper (it runs 7 times a line)."""
    return html.escape(str(text), quote=True)


def pod_url_parts() -> tuple[str, str, str]:
    """The pod page's URL around its namespace and name, from one ``reverse``: a page of
    cycles makes one, not one per cycle."""
    url = reverse("pod", args=("NAMESPACE", "NAME"))
    before, rest = url.split("NAMESPACE", 1)
    between, after = rest.split("NAME", 1)
    return before, between, after


def history_lines(
    transitions: Iterable[PodTransition | ShownTransition],
    url: tuple[str, str, str] | None = None,
) -> list[SafeString]:
    """Each transition as the History page shows it: the pod (a link to its page), what
    happened, from which state to which, on which node, and the message. ``url``:
    ``pod_url_parts()``, when the caller made it already."""
    before, between, after = url or pod_url_parts()
    lines = []
    for t in transitions:
        href = (
            f"{before}{quote(t.namespace, safe=_SAFE)}{between}{quote(t.name, safe=_SAFE)}{after}"
        )
        kind = KIND_LABELS.get(t.kind, t.kind)
        was = STATE_LABELS.get(t.from_state, t.from_state)
        now = STATE_LABELS.get(t.to_state, t.to_state)
        line = (
            f'<a href="{_e(href)}">{_e(t.namespace)}/{_e(t.name)}</a> {_e(kind)} '
            f"({_e(was)} → {_e(now)})"
        )
        if t.node:
            line += f" on {_e(t.node)}"
        if t.message:
            line += f": {_e(t.message)}"
        lines.append(mark_safe(line))  # noqa: S308 - every part above is escaped
    return lines
