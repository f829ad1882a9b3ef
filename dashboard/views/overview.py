from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.presenters.queues import queue_rows
from dashboard.selectors.live import live_summary
from dashboard.views.common import cluster_now, is_stale, render_page


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    """Every queue now; the live section refreshes itself every few seconds."""
    summary = live_summary()
    now = cluster_now()
    context = {
        "summary": summary,
        "queues": queue_rows(
            summary.queues,
            summary.risks,
            problems=summary.problems,
            invalid=summary.invalid,
            missing=summary.missing_queues,
        )  # fmt: skip
        if summary
        else [],
        "stale": is_stale(summary, now),
        "now": now,
    }
    return render_page(request, "dashboard/overview.html", context, partials=("live",))
