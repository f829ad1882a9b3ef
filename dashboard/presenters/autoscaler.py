"""The Autoscaler page's table of events, each row built in Python.

A cluster keeps an event per pod the autoscaler could not help (``NotTriggerScaleUp``: 44 on
the openb run, up to ``autoscaler_activity``'s limit of 200); through the template language a
row cost about 30 us (a date filter alone 17 us). Each part is written as the template wrote
it (``dashboard.presenters.markup``); the tests compare the rows with the template's rendering.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.safestring import SafeString, mark_safe

from dashboard.presenters.markup import date_time, text


def event_row(event: dict) -> str:
    """One ``<tr>``: when, reason (its class in lower case), the object, the message."""
    reason = event["reason"]
    namespace = f"{text(event['namespace'])}/" if event["namespace"] else ""
    return (
        f'<tr class="event-{text(str(reason).lower())}"><td>{date_time(event["at"])}</td>'
        f"<td>{text(reason)}</td><td>{text(event['kind'])} {namespace}{text(event['name'])}</td>"
        f"<td>{text(event['message'])}</td></tr>"
    )


def event_rows(events: Iterable[dict]) -> SafeString:
    """The rows of the events table (``autoscaler_activity``'s events), nothing between them;
    every part that comes from the cluster is escaped."""
    return mark_safe("".join(event_row(e) for e in events))  # noqa: S308 - event_row escapes
