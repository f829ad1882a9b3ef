from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from dashboard.health import broker_status_for_pages
from dashboard.selectors.live import queue_names
from dashboard.selectors.scheduler_state import SchedulerState, scheduler_state
from dashboard.views.common import cluster_now

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
    ("whatif", "What-if lab", ("whatif-comparison", "whatif-pods")),
]


def navigation(request: HttpRequest) -> dict:
    current = request.resolver_match.url_name if request.resolver_match else None
    return {
        "navigation": [
            {"url": reverse(name), "label": label, "current": current in (name, *section)}
            for name, label, section in NAVIGATION
        ]
    }


class KnownQueues:
    """``name in queues_known``: the latest cycle saw queue ``name`` (True before any cycle:
    nothing says otherwise). A page marks a queue it does not know as not existing."""

    def __init__(self) -> None:
        self.names = queue_names()

    def __contains__(self, name: object) -> bool:
        return self.names is None or name in self.names


def scheduler_failure(request: HttpRequest) -> dict:
    """What the scheduler last reported about itself, for the banner on every page (and
    ``broker``, whether Redis answers: ``dashboard.health.broker_status_for_pages``):
    ``scheduler`` (a ``SchedulerState``: its latest cycle, mode, period, whether it stopped)
    and ``cycle_failure``, set while its latest cycle failed; ``queues_known``, the queues its
    latest cycle saw (``KnownQueues``). Each is read only when a template asks."""
    state = SimpleLazyObject(_state)
    return {
        "broker": SimpleLazyObject(broker_status_for_pages),  # Redis: down is said on the banner
        "scheduler": state,
        "cycle_failure": SimpleLazyObject(lambda: state.failure),
        "queues_known": SimpleLazyObject(KnownQueues),
    }


def _state() -> SchedulerState:
    return scheduler_state(cluster_now())
