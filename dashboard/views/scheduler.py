from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.presenters.charts import action_durations_figure, chart_html
from dashboard.selectors.cycles import latest_error, recent_cycles
from dashboard.selectors.live import live_summary
from dashboard.services import gate_stats
from dashboard.views.common import render_page

RECENT_CYCLES = 60


@require_GET
def scheduler(request: HttpRequest) -> HttpResponse:
    """What the scheduler reported about itself: the mode of its latest cycle, the period,
    names and configuration it reported (never the web process's own settings, which may
    differ from the worker's), its cycles and its latest error."""
    cycles = recent_cycles(RECENT_CYCLES)
    summary = live_summary()
    context = {
        "summary": summary,
        # What the scheduler ran its latest cycle with, as it reported it: a configuration
        # file or ConfigMap may differ from anything the dashboard process could read itself.
        "reported": summary.config if summary else None,
        "latest": cycles[0] if cycles else None,
        "latest_error": latest_error(),
        "cycles": cycles[:20],
        "actions_chart": chart_html(action_durations_figure(cycles), "action-durations")
        if cycles
        else "",
        "gates": gate_stats.snapshot(),
    }
    return render_page(request, "dashboard/scheduler.html", context, partials=("live",))


@require_GET
def scheduler_banner(request: HttpRequest) -> HttpResponse:
    """The banner every page carries, alone: its htmx refresh."""
    return render(request, "dashboard/includes/scheduler_banner.html")
