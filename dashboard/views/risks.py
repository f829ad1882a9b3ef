from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.selectors.live import live_summary
from dashboard.views.common import render_page

# Risk classes, worst first, with what each means to the person who submitted the workload.
RISK_CLASSES = [
    ("fits_no_node_shape", "Fits no node shape", "no node, and no node the autoscaler can add, "
     "is large enough: the workload will never run as it is"),
    ("fits_after_scale_up", "Fits after a scale-up", "runs once the autoscaler adds a node"),
    ("waiting_for_queue", "Waiting for its queue", "fits the cluster; its queue is full"),
    ("fits_now", "Fits now", "a node has room for it now"),
]  # fmt: skip


@require_GET
def risks(request: HttpRequest) -> HttpResponse:
    summary = live_summary()
    by_class: dict[str, list[dict]] = {key: [] for key, _, _ in RISK_CLASSES}
    for risk in (summary or {}).get("risks", []):
        by_class.setdefault(risk.get("risk", ""), []).append(risk)
    groups = [
        {"key": key, "label": label, "meaning": meaning, "workloads": by_class[key]}
        for key, label, meaning in RISK_CLASSES
    ]
    context = {"summary": summary, "groups": groups}
    return render_page(request, "dashboard/risks.html", context, partials=("live",))
