from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.presenters.charts import action_durations_figure, chart_html
from dashboard.selectors.cycles import recent_cycles
from dashboard.selectors.live import live_summary
from dashboard.services import gate_stats
from dashboard.views.common import render_page

RECENT_CYCLES = 60


@require_GET
def scheduler(request: HttpRequest) -> HttpResponse:
    cycles = recent_cycles(RECENT_CYCLES)
    summary = live_summary()
    context = {
        "summary": summary,
        # What the scheduler ran its latest cycle with, as it reported it: a configuration
        # file or ConfigMap may differ from anything the dashboard process could read itself.
        "reported": summary.config if summary else None,
        "cycles": cycles[:20],
        "actions_chart": chart_html(action_durations_figure(cycles), "action-durations")
        if cycles
        else "",
        "gates": gate_stats.snapshot(),
        "config": {
            "period": settings.SLUICE_CYCLE_PERIOD,
            "mode": settings.SLUICE_MODE,
            "scheduler_names": ", ".join(settings.SLUICE_SCHEDULER_NAMES),
        },
    }
    return render_page(request, "dashboard/scheduler.html", context, partials=("live",))
