from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.forms import PodFilterForm
from dashboard.presenters.reasons import explain_rows
from dashboard.selectors.live import live_summary
from dashboard.selectors.pods import PodFilter, find_pod, pod_list
from dashboard.views.common import render_page


@require_GET
def pods(request: HttpRequest) -> HttpResponse:
    form = PodFilterForm(request.GET or None)
    filters = PodFilter(**form.cleaned_data) if form.is_valid() else PodFilter()
    query = request.GET.copy()
    query.pop("page", None)
    summary = live_summary()
    cluster = summary.cluster if summary else None
    page = pod_list(filters=filters, page=request.GET.get("page", 1), cluster=cluster)
    explain_rows(page.object_list, summary.risks if summary else [])
    context = {"form": form, "summary": summary, "page": page, "query": query.urlencode()}
    return render_page(request, "dashboard/pods.html", context, partials=("results",))


@require_GET
def pod_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    summary = live_summary()
    cluster = summary.cluster if summary else None
    uid = request.GET.get("uid", "")[:64]
    detail = find_pod(namespace=namespace, name=name, cluster=cluster, uid=uid)
    if detail.pod is not None and detail.current:
        explain_rows([detail.pod], summary.risks if summary else [])
    context = {"namespace": namespace, "name": name, "detail": detail, "uid": uid,
               "cluster": cluster}  # fmt: skip
    response = render_page(request, "dashboard/pod.html", context, partials=("live",))
    if detail.pod is None and not detail.timeline:
        response.status_code = 404
    return response
