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
from dashboard.presenters.queues import (
    VOLCANO_SAYS,
    explained_groups,
    implicit_default_note,
    queue_rows,
    tree_rows,
)
from dashboard.selectors.cluster import ClusterError, queue_specs
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
    """A queue's figures, spec as written and derived, what is wrong with it and its pods.

    A queue that does not exist but that pods or PodGroups name is a page of its own (200):
    it says the queue does not exist, with the events said on those objects and the pods that
    wait for it. Only a name nothing refers to, with no history, is a 404."""
    summary = live_summary()
    now = cluster_now()
    ranges = range_context(request)
    # The current cluster's history only (README, History): a queue only an earlier cluster
    # had is no queue of this one, and a 404 like any name nothing refers to.
    cluster = summary.cluster if summary is not None else None
    series = queue_series(name, ranges["range"], now, cluster=cluster)
    row = None
    if summary is not None:
        rows = queue_rows(
            summary.queues, summary.risks, only=name, problems=summary.problems,
            invalid=summary.invalid,
        )  # fmt: skip
        row = next(iter(rows), None)
    groups, missing = [], None
    if summary is not None and (row is not None or name not in {q.name for q in summary.queues}):
        waiting = queue_waiting(name)
        groups = explained_groups(waiting, summary.risks, gate_removed_uids(queue=name))
        named = any(p.queue == name for p in summary.problems) or any(
            q.name == name for q in summary.missing_queues
        )
        if row is None and (named or any(waiting.values())):
            missing = _missing_queue(name, summary)
    context = {
        "name": name,
        "summary": summary,
        "stale": is_stale(summary, now),
        "queue": row,
        "implicit_note": implicit_default_note(name) if row is not None and row.implicit else "",
        "missing": missing,
        "pods": groups,
        "series": series,
        "cpu_chart": chart_html(queue_cpu_figure(series), "queue-cpu") if series else "",
        "pods_chart": chart_html(pod_counts_figure(series), "queue-pods") if series else "",
        "series_rows": _queue_summary(series),
        "summary_caption": f"The same figures in numbers ({len(series)} samples, "
        f"{ranges['range'].label.lower()})",
        **ranges,
    }
    status = 404 if summary and row is None and not missing and not series else 200
    response = render_page(request, "dashboard/queue.html", context, partials=("live", "charts"))
    response.status_code = status
    return response


def _missing_queue(name: str, summary) -> dict:
    """Pods name queue ``name``, which does not exist: the events said on their PodGroups (or
    pods) and what Volcano does instead."""
    said = [p for p in summary.problems if p.queue == name]
    return {
        "events": said,
        "volcano": VOLCANO_SAYS["QueueNotFound"],
        "invalid": [o for o in summary.invalid if o.kind == "queue" and o.name == name],
    }


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
    specs: dict[str, dict] | None
    try:
        specs = queue_specs()
    except ClusterError as exc:
        specs, error = None, str(exc)
    reports = {q.name: q for q in summary.queues} if summary else {}
    problems = summary.problems if summary else []
    invalid = summary.invalid if summary else []
    missing = [q.name for q in summary.missing_queues] if summary else []
    context = {
        "summary": summary,
        "stale": is_stale(summary, cluster_now()),
        "tree": tree_rows(reports, specs, problems, invalid, missing),
        "error": error,
    }
    return render_page(request, "dashboard/queue_tree.html", context, partials=("live",))
