from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.forms import PodFilterForm
from dashboard.presenters.reasons import explain_rows
from dashboard.selectors.live import live_summary
from dashboard.selectors.pods import PodFilter, pod_list, pod_timeline
from dashboard.views.common import render_page


@require_GET
def pods(request: HttpRequest) -> HttpResponse:
    form = PodFilterForm(request.GET or None)
    filters = PodFilter(**form.cleaned_data) if form.is_valid() else PodFilter()
    query = request.GET.copy()
    query.pop("page", None)
    summary = live_summary()
    page = pod_list(filters=filters, page=request.GET.get("page", 1))
    explain_rows(page.object_list, summary.risks if summary else [])
    context = {"form": form, "summary": summary, "page": page, "query": query.urlencode()}
    return render_page(request, "dashboard/pods.html", context, partials=("results",))


@require_GET
def pod_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    timeline = pod_timeline(namespace=namespace, name=name)
    current = pod_list(filters=PodFilter(namespace=namespace, name=name), page=1)
    summary = live_summary()
    rows = [p for p in current.object_list if p.name == name]
    explain_rows(rows, summary.risks if summary else [])
    context = {"namespace": namespace, "name": name, "timeline": timeline, "current": rows}
    response = render_page(request, "dashboard/pod.html", context, partials=("timeline",))
    if not timeline and not rows:
        response.status_code = 404
    return response
