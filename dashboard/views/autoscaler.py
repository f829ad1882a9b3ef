from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.presenters.autoscaler import event_rows
from dashboard.selectors.cluster import ClusterError, autoscaler_activity
from dashboard.views.common import render_page

RECENT_ON_OVERVIEW = 5


@require_GET
def autoscaler(request: HttpRequest) -> HttpResponse:
    """Scale-ups with the pods that triggered them (false ones and wasted node-time marked),
    and the autoscaler's events. ``recent`` is the overview's short list."""
    error = ""
    try:
        records, events = autoscaler_activity()
    except ClusterError as exc:
        records, events, error = [], [], str(exc)
    context = {
        "records": records,
        "recent": records[:RECENT_ON_OVERVIEW],
        "events": events,
        "event_rows": event_rows(events),
        "false_count": sum(1 for r in records if r.get("false_scale_up")),
        "wasted_seconds": sum(r.get("wasted_seconds", 0) for r in records),
        "error": error,
    }
    return render_page(request, "dashboard/autoscaler.html", context, partials=("live", "recent"))
