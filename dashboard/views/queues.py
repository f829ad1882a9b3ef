from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.presenters.charts import (
    CPU_FIELDS,
    chart_html,
    cpu_series,
    pod_counts_figure,
    queue_cpu_figure,
    series_summary,
)
from dashboard.presenters.queues import explained_groups, queue_rows, tree_rows
from dashboard.selectors.cluster import ClusterUnavailable, queue_specs
from dashboard.selectors.live import live_summary
from dashboard.selectors.queues import (
    COUNT_FIELDS,
    gate_removed_uids,
    queue_series,
    queue_waiting,
)
from dashboard.views.common import cluster_now, is_stale, range_context, render_page


@require_GET
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    summary = live_summary()
    now = cluster_now()
    ranges = range_context(request)
    series = queue_series(name, ranges["range"], now)
    row = (
        next(iter(queue_rows(summary.queues, summary.risks, only=name)), None) if summary else None
    )
    groups = []
    if row is not None and summary is not None:
        groups = explained_groups(queue_waiting(name), summary.risks, gate_removed_uids(queue=name))
    context = {
        "name": name,
        "summary": summary,
        "stale": is_stale(summary, now),
        "queue": row,
        "pods": groups,
        "series": series,
        "cpu_chart": chart_html(queue_cpu_figure(series), "queue-cpu") if series else "",
        "pods_chart": chart_html(pod_counts_figure(series), "queue-pods") if series else "",
        "series_rows": _queue_summary(series),
        "summary_caption": f"The same figures in numbers ({len(series)} samples, "
        f"{ranges['range'].label.lower()})",
        **ranges,
    }
    status = 404 if summary and row is None and not series else 200
    response = render_page(request, "dashboard/queue.html", context, partials=("live", "charts"))
    response.status_code = status
    return response


def _queue_summary(series: list[dict]) -> list[dict]:
    columns = {f"{field} CPU (cores)": cpu_series(series, field) for field in CPU_FIELDS}
    columns["share"] = [s["share"] for s in series]
    columns.update({f"{state} pods": [s[state] for s in series] for state in COUNT_FIELDS})
    return series_summary(columns)


@require_GET
def queue_tree(request: HttpRequest) -> HttpResponse:
    """Queues as a tree from the cluster's ``spec.parent``, figures from the latest cycle."""
    summary = live_summary()
    error = ""
    try:
        specs = queue_specs()
    except ClusterUnavailable as exc:
        specs, error = {}, str(exc)
    reports = {q.name: q for q in summary.queues} if summary else {}
    context = {
        "summary": summary,
        "stale": is_stale(summary, cluster_now()),
        "tree": tree_rows(reports, specs),
        "error": error,
    }
    return render_page(request, "dashboard/queue_tree.html", context, partials=("live",))
