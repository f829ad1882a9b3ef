from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from dashboard.selectors.cycles import cycle_failure

# (url name, label, url names that belong to the same section)
NAVIGATION = [
    ("overview", "Overview", ()),
    ("queue-tree", "Queues", ("queue",)),
    ("pods", "Pods", ("pod",)),
    ("namespaces", "Namespaces", ("namespace-toggle",)),
    ("history", "History", ()),
    ("risks", "Admission risk", ()),
    ("scheduler", "Scheduler", ()),
    ("autoscaler", "Autoscaler", ()),
]


def navigation(request: HttpRequest) -> dict:
    current = request.resolver_match.url_name if request.resolver_match else None
    return {
        "navigation": [
            {"url": reverse(name), "label": label, "current": current in (name, *section)}
            for name, label, section in NAVIGATION
        ]
    }


def scheduler_failure(request: HttpRequest) -> dict:
    """``cycle_failure``: set while the latest scheduling cycle failed (every page says so);
    read only by a template that asks."""
    return {"cycle_failure": SimpleLazyObject(cycle_failure)}
