"""What every page view shares: partial rendering for htmx and the staleness check."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.selectors.live import LiveSummary
from dashboard.selectors.sampling import RANGES, chart_range
from dashboard.selectors.scheduler_state import ASSUMED_PERIOD_S, STALE_MARGIN, STALE_PERIODS
from scheduler.kube.config import clock_from_kubeconfig


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
    """True when the latest good cycle is too old to describe the cluster now, by the period
    the scheduler reported (the banner says why: cycles fail, or none ran)."""
    if summary is None:
        return False
    reported = summary.config.period_s if summary.config is not None else 0.0
    period = reported or ASSUMED_PERIOD_S
    return (now - summary.at).total_seconds() > STALE_PERIODS * period + STALE_MARGIN.seconds


def range_context(request: HttpRequest) -> dict:
    selected = chart_range(request.GET.get("range"))
    return {"range": selected, "ranges": RANGES.values()}
