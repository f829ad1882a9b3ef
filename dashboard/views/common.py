"""What every page view shares: partial rendering for htmx and the staleness check."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.selectors.live import LiveSummary
from dashboard.selectors.sampling import RANGES, chart_range
from scheduler.kube.config import clock_from_kubeconfig

# A cycle older than this many periods (plus a margin) means the scheduler is not running.
STALE_PERIODS = 10
STALE_MARGIN = timedelta(seconds=30)


def render_page(
    request: HttpRequest, template: str, context: dict, partials: tuple[str, ...] = ()
) -> HttpResponse:
    """The whole page, or only the partial an htmx request targets (partial name = the
    target element's id), so a live section refreshes without reloading the page."""
    target = request.htmx.target if getattr(request, "htmx", None) else None
    if target in partials:
        template = f"{template}#{target}"
    return render(request, template, context)


def cluster_now() -> datetime:
    """The cluster's time: a simulated cluster may run sped up, and its cycles carry its time."""
    path = settings.SLUICE_KUBECONFIG
    try:
        clock = _clock(path, os.path.getmtime(path)) if path else time.time
    except OSError:
        return timezone.now()
    return datetime.fromtimestamp(clock(), tz=UTC)


@functools.lru_cache(maxsize=4)
def _clock(path: str, mtime: float) -> Callable[[], float]:
    return clock_from_kubeconfig(path)  # mtime in the key: a rewritten kubeconfig is re-read


def is_stale(summary: LiveSummary | None, now: datetime) -> bool:
    """True when the latest cycle is too old to describe the cluster now."""
    if summary is None:
        return False
    period = timedelta(seconds=settings.SLUICE_CYCLE_PERIOD)
    return now - summary.at > STALE_PERIODS * period + STALE_MARGIN


def range_context(request: HttpRequest) -> dict:
    selected = chart_range(request.GET.get("range"))
    return {"range": selected, "ranges": RANGES.values()}
