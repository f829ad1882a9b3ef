"""The what-if lab's pages: experiments (start, progress, cancel), a comparison, the simulated
pods behind each figure, and the experiment as a file."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from dashboard.whatif import present, service, sources
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import MAX_CYCLES, MAX_HORIZON, SpecError, loads, resolve_and_load

log = logging.getLogger(__name__)
EXAMPLES_DIR = Path(__file__).parent / "examples"
EXAMPLES = {"gates": "gates.yaml", "trace": "trace.yaml"}


def example_text(name: str) -> str:
    return (EXAMPLES_DIR / EXAMPLES.get(name, EXAMPLES["gates"])).read_text()


WORKLOAD_SOURCES = {
    "gates": "example: gate burst (a scenario)",
    "trace": "example: the Alibaba openb trace",
    "recorded": "pods recorded on the connected cluster, over a window",
}
CLUSTER_SOURCES = {
    "own": "the workload's own (the simulated cluster's shape)",
    "connected": "a copy of the connected cluster's nodes",
}


def _list_context(
    request: HttpRequest, text: str, error: str = "", form: dict | None = None
) -> dict:
    return {
        "experiments": Experiment.objects.all()[:50],
        "spec_text": text,
        "spec_error": error,
        "examples": sorted(EXAMPLES),
        "workload_sources": WORKLOAD_SOURCES,
        "cluster_sources": CLUSTER_SOURCES,
        "form": form or _default_window(),
    }


def _default_window() -> dict:
    """The form's window: the last hour of the latest report's cluster, by its clock."""
    from dashboard.models import Cycle

    cluster = sources.current_cluster()
    latest = (
        Cycle.objects.filter(cluster=cluster).order_by("-started_at").values_list(
            "started_at", flat=True).first() if cluster is not None else None
    )  # fmt: skip
    end = (latest or timezone.now()).astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)
    start = end - timedelta(hours=1)
    return {"workload": "gates", "cluster": "own", "from": _local(start), "to": _local(end)}


def _local(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S")


@require_GET
def experiments(request: HttpRequest) -> HttpResponse:
    workload = request.GET.get("workload") or request.GET.get("example", "gates")
    cluster = request.GET.get("cluster", "own")
    if workload in EXAMPLES and cluster != "connected":
        return render(
            request, "dashboard/whatif.html", _list_context(request, example_text(workload))
        )
    form = {**_default_window(), "workload": workload, "cluster": cluster}
    form.update({k: request.GET[k] for k in ("from", "to") if request.GET.get(k)})
    try:
        text = sourced_experiment(form)
    except SpecError as exc:
        return render(request, "dashboard/whatif.html",
                      _list_context(request, "", str(exc), form), status=400)  # fmt: skip
    return render(request, "dashboard/whatif.html", _list_context(request, text, form=form))


def sourced_experiment(form: dict) -> str:
    """The experiment file the sources form asks for, its workload and cluster read from
    Sluice's history and the connected cluster and frozen in it; the variants are the
    gate-burst example's."""
    workload, cluster = form.get("workload"), form.get("cluster")
    if workload not in WORKLOAD_SOURCES:
        raise SpecError(f"workload: one of {', '.join(WORKLOAD_SOURCES)}")
    if cluster not in CLUSTER_SOURCES:
        raise SpecError(f"cluster: one of {', '.join(CLUSTER_SOURCES)}")
    data = yaml.safe_load(example_text("gates" if workload == "recorded" else workload))
    if workload == "recorded":
        if cluster != "connected":
            raise SpecError("cluster: a recorded workload has no cluster of its own: choose "
                            f"{CLUSTER_SOURCES['connected']!r}")  # fmt: skip
        window = {"from": form.get("from"), "to": form.get("to")}
        data["workload"] = {"recorded": window}
        data["name"] = "recorded workload, gates on or off"
        data["description"] = (f"The pods Sluice recorded on the connected cluster from "
                               f"{window['from']} to {window['to']} (UTC), on a copy of its nodes.")  # fmt: skip
        try:
            seconds = (sources.parse_when(window["to"], "workload.recorded.to")
                       - sources.parse_when(window["from"], "workload.recorded.from")).total_seconds()  # fmt: skip
        except sources.SourceError as exc:
            raise SpecError(str(exc)) from None
        data["horizon"] = max(60.0, min(seconds, MAX_HORIZON))
        data["step"] = max(5.0, float(-(-data["horizon"] // MAX_CYCLES)))
    if cluster == "connected":
        data["cluster"] = {"connected": {}}
    spec = resolve_and_load(yaml.safe_dump(data, sort_keys=False), source="the experiment")
    return spec.to_yaml()


@login_required
@require_POST
def start(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("spec", "")
    try:  # a recorded window or a copy of the connected cluster is read and frozen here
        spec = resolve_and_load(text, source="the experiment")
    except SpecError as exc:
        return render(request, "dashboard/whatif.html", _list_context(request, text, str(exc)),
                      status=400)  # fmt: skip
    experiment = service.create(spec)
    transaction.on_commit(lambda: _send(experiment))
    messages.success(request, f"Experiment {experiment.name} queued.")
    return redirect("whatif")


def _send(experiment: Experiment) -> None:
    from dashboard.celery import app

    try:  # by name, through this app: the web process has no worker's current app
        app.send_task("dashboard.tasks.run_experiment", args=[experiment.pk], queue="default")
    except Exception as exc:  # the broker is down: say so on the experiment
        log.exception("could not queue experiment %s", experiment.pk)
        Experiment.objects.filter(pk=experiment.pk).update(
            status=Experiment.Status.FAILED, error=f"could not queue the task: {exc}"
        )


@require_GET
def progress(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = get_object_or_404(Experiment, pk=pk)
    return render(request, "dashboard/whatif_progress.html", {"experiment": experiment})


@login_required
@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = get_object_or_404(Experiment, pk=pk)
    service.request_cancel(experiment)
    experiment.refresh_from_db()
    if request.htmx:
        return render(request, "dashboard/whatif_progress.html", {"experiment": experiment})
    return redirect("whatif")


def _results(experiment: Experiment) -> list[dict]:
    return [
        {
            "name": r.name,
            "description": r.description,
            "summary": r.summary,
            "by_queue": r.by_queue,
            "samples": r.samples,
            "pods": r.pods,
            "scale_ups": r.scale_ups,
            "evictions": r.evictions,
            "variant": next(
                (v.to_dict() for v in loads(experiment.spec).variants if v.name == r.name), {}
            ),
            "wall_seconds": r.wall_seconds,
        }
        for r in experiment.results.all()
    ]


@require_GET
def comparison(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = get_object_or_404(Experiment, pk=pk)
    spec = loads(experiment.spec)
    results = _results(experiment)
    context = {
        "experiment": experiment,
        "spec": spec,
        "results": results,
        "verdict": present.verdict(results) if results else "",
        "charts": present.charts(results) if results else {},
        "summary_rows": present.summary_rows(results),
        "queue_rows": present.queue_rows(results),
        "simulated_seconds": spec.horizon * len(spec.variants),
    }
    return render(request, "dashboard/whatif_comparison.html", context)


@require_GET
def pods(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    experiment = get_object_or_404(Experiment, pk=pk)
    result = experiment.results.filter(position=position).first()
    if result is None:
        raise Http404(f"experiment {pk} has no variant {position}")
    flt = request.GET.get("filter", "")
    if flt not in present.POD_FILTERS:
        flt = ""
    queue = request.GET.get("queue", "")
    data = {"pods": result.pods, "scale_ups": result.scale_ups}
    rows = present.pods_for(data, flt, queue)
    context = {
        "experiment": experiment,
        "result": result,
        "rows": rows[:1000],
        "count": len(rows),
        "filter": flt,
        "filter_label": present.POD_FILTERS[flt],
        "filters": present.POD_FILTERS,
        "queue": queue,
        "scale_ups": [
            s
            for s in result.scale_ups
            if flt in ("scale-up", "false-scale-up") and (flt == "scale-up" or s["false_scale_up"])
        ],  # fmt: skip
    }
    return render(request, "dashboard/whatif_pods.html", context)


@require_GET
def export(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = get_object_or_404(Experiment, pk=pk)
    response = HttpResponse(experiment.spec, content_type="application/yaml; charset=utf-8")
    name = slugify(experiment.name) or f"experiment-{pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.yaml"'
    return response
