from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.selectors.charts import (
    CPU_FIELDS,
    chart_html,
    cpu_series,
    pod_counts_figure,
    queue_cpu_figure,
    series_summary,
)
from dashboard.selectors.cluster import ClusterUnavailable, queue_specs
from dashboard.selectors.figures import format_resources
from dashboard.selectors.live import live_summary
from dashboard.selectors.queues import COUNT_FIELDS, ROOT, queue_in, queue_pods, queue_series
from dashboard.views.bars import with_bars_html
from dashboard.views.common import cluster_now, is_stale, range_context, render_page


@require_GET
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    summary = live_summary()
    now = cluster_now()
    ranges = range_context(request)
    series = queue_series(name, ranges["range"], now)
    context = {
        "name": name,
        "summary": summary,
        "stale": is_stale(summary, now),
        "queue": queue_in(summary, name) if summary else None,
        "pods": queue_pods(summary, name) if summary else {},
        "series": series,
        "cpu_chart": chart_html(queue_cpu_figure(series), "queue-cpu") if series else "",
        "pods_chart": chart_html(pod_counts_figure(series), "queue-pods") if series else "",
        "series_rows": _queue_summary(series),
        "summary_caption": f"The same figures in numbers ({len(series)} samples, "
        f"{ranges['range'].label.lower()})",
        **ranges,
    }
    if context["queue"]:
        context["queue"] = with_bars_html([context["queue"]])[0]
    status = 404 if summary and context["queue"] is None and not series else 200
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
    rows = {q["name"]: q for q in (summary or {}).get("queues", [])}
    context = {
        "summary": summary,
        "stale": is_stale(summary, cluster_now()),
        "tree": _tree(rows, specs),
        "error": error,
    }
    return render_page(request, "dashboard/queue_tree.html", context, partials=("live",))


def _tree(rows: dict[str, dict], specs: dict[str, dict]) -> list[dict]:
    """Depth-first rows, parents before children; without specs every queue is under root."""
    children: dict[str, list[str]] = {}
    for name in sorted(set(rows) | set(specs)):
        if name == ROOT:
            continue
        parent = (specs.get(name) or {}).get("parent") or ROOT
        children.setdefault(parent, []).append(name)
    out: list[dict] = []

    def visit(name: str, depth: int) -> None:
        figures, spec = rows.get(name) or {}, specs.get(name) or {}
        out.append(
            {
                "name": name,
                "depth": depth,
                "indent": depth * 1.5,
                "allocated": format_resources(figures.get("allocated")),
                "deserved": format_resources(figures.get("deserved")),
                "capability": format_resources(figures.get("capability")),
                "guarantee": ", ".join(f"{v} {k}" for k, v in spec.get("guarantee", {}).items()),
                "share": figures.get("share"),
                "over_deserved": figures.get("over_deserved", False),
                "reclaimable": spec.get("reclaimable", True),
                "in_cycle": name in rows,
            }
        )
        for child in children.get(name, []):
            visit(child, depth + 1)

    visit(ROOT, 0)
    return out
