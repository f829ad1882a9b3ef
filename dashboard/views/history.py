from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.forms import CycleFilterForm
from dashboard.presenters.charts import (
    STATE_COLOURS,
    chart_html,
    cycle_duration_figure,
    pod_counts_figure,
    series_summary,
)
from dashboard.presenters.cycles import cycle_rows
from dashboard.selectors.cycles import CycleFilter, cycle_list, cycle_series, cycle_transitions
from dashboard.views.common import cluster_now, range_context, render_page


@require_GET
def history(request: HttpRequest) -> HttpResponse:
    form = CycleFilterForm(request.GET or None)
    filters = CycleFilter(**form.cleaned_data) if form.is_valid() else CycleFilter()
    page = cycle_list(filters=filters, page=request.GET.get("page", 1))
    cycles = list(page.object_list)
    transitions = cycle_transitions([c.id for c in cycles], pod=filters.pod)
    ranges = range_context(request)
    series = cycle_series(ranges["range"], cluster_now())
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "cycles": cycles,
        "cycle_rows": cycle_rows(cycles, transitions),
        "query": query.urlencode(),
        "series": series,
        "duration_chart": chart_html(cycle_duration_figure(series), "cycle-duration")
        if series
        else "",
        "pods_chart": chart_html(pod_counts_figure(series, time_key="started_at"), "cycle-pods")
        if series
        else "",
        "series_rows": _cycle_summary(series),
        "summary_caption": f"The same figures in numbers ({len(series)} cycles, "
        f"{ranges['range'].label.lower()})",
        **ranges,
    }
    return render_page(request, "dashboard/history.html", context, partials=("results", "charts"))


def _cycle_summary(series: list[dict]) -> list[dict]:
    columns = {"duration (ms)": [s["duration_ms"] for s in series]}
    for state in STATE_COLOURS:
        columns[f"{state.value} pods"] = [(s["counts"] or {}).get(state.value) for s in series]
    return series_summary(columns)
