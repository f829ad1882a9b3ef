from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard.forms import NamespaceOptInForm
from dashboard.models import NamespaceOptInChange
from dashboard.selectors.cluster import (
    ClusterError,
    ObjectNotFound,
    namespace_list,
    read_namespace,
)
from dashboard.selectors.live import live_summary
from dashboard.views.common import render_page

PERMISSION = "dashboard.toggle_namespace_opt_in"
AUDIT_ROWS = 20
OBSERVE_MODE = (
    "Sluice runs in observe mode: it writes nothing to the cluster (the observe overlay's "
    "role may not label a namespace) and no webhook gates pods. Opt namespaces in once the "
    "act overlay is applied, or label them with kubectl."
)


def _acting() -> bool:
    return settings.SLUICE_MODE == "act"


def namespaces(request: HttpRequest) -> HttpResponse:
    summary = live_summary()
    gated = summary.gated_by_namespace if summary else {}
    error = ""
    try:
        rows = [{**ns, "gated": gated.get(ns["name"], 0)} for ns in namespace_list()]
    except ClusterError as exc:
        rows, error = [], str(exc)
    context = {
        "namespaces": rows,
        "error": error,
        "can_toggle": _acting() and request.user.has_perm(PERMISSION),
        "observe_mode": not _acting(),
        "changes": NamespaceOptInChange.objects.select_related("changed_by")[:AUDIT_ROWS],
    }
    return render_page(request, "dashboard/namespaces.html", context, partials=("live",))


@login_required
@permission_required(PERMISSION, raise_exception=True)
def namespace_toggle(request: HttpRequest, name: str) -> HttpResponse:
    """GET asks for confirmation; POST labels the namespace and records who did it.

    A namespace that does not exist is a 404 saying so, on GET and on POST; any other failure
    of the cluster is said in words with the status it deserves (``ClusterError.status``).
    In observe mode nothing is sent to the cluster: 409, saying why."""
    enabled = request.POST.get("enabled", request.GET.get("enabled")) == "true"
    if not _acting():
        context = {"name": name, "enabled": enabled, "observe_mode": OBSERVE_MODE}
        return render(request, "dashboard/namespace_toggle.html", context, status=409)
    form = NamespaceOptInForm(request.POST or None, initial={"enabled": enabled})
    error, status, missing = "", 200, False
    try:
        if request.method == "POST" and form.is_valid():
            form.save(namespace=name, user=request.user)
            state = "opted in" if form.cleaned_data["enabled"] else "opted out"
            messages.success(request, f"Namespace {name} {state}: new pods follow at once.")
            return redirect("namespaces")
        if request.method != "POST":
            read_namespace(name)  # ask to confirm only what exists
    except ClusterError as exc:
        error, status, missing = str(exc), exc.status, isinstance(exc, ObjectNotFound)
    context = {"name": name, "enabled": enabled, "form": form, "error": error, "missing": missing}
    return render(request, "dashboard/namespace_toggle.html", context, status=status)
