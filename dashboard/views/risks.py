from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.presenters.reasons import RISK_LABELS
from dashboard.selectors.live import live_summary
from dashboard.views.common import render_page
from scheduler.api.report import RISK_ORDER, WorkloadRisk


@require_GET
def risks(request: HttpRequest) -> HttpResponse:
    summary = live_summary()
    by_class: dict = {risk: [] for risk in RISK_ORDER}
    for risk in summary.risks if summary else []:
        by_class[risk.risk].append(risk)
    groups = [_group(risk, by_class[risk]) for risk in RISK_ORDER]
    context = {"summary": summary, "groups": groups}
    return render_page(request, "dashboard/risks.html", context, partials=("live",))


def _group(risk, workloads: list[WorkloadRisk]) -> dict:
    label, meaning = RISK_LABELS[risk]
    return {"key": risk.value, "label": label, "meaning": meaning, "workloads": workloads}
