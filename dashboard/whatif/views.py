"""The what-if lab's pages: experiments (start, progress, cancel), a comparison, the simulated
pods behind each figure, and the experiment as a file."""

from __future__ import annotations

import logging
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from dashboard.whatif import present, service
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import SpecError, loads

log = logging.getLogger(__name__)
EXAMPLES_DIR = Path(__file__).parent / "examples"
EXAMPLES = {"gates": "gates.yaml", "trace": "trace.yaml"}


def example_text(name: str) -> str:
    return (EXAMPLES_DIR / EXAMPLES.get(name, EXAMPLES["gates"])).read_text()


def _list_context(request: HttpRequest, text: str, error: str = "") -> dict:
    return {
        "experiments": Experiment.objects.all()[:50],
        "spec_text": text,
        "spec_error": error,
        "examples": sorted(EXAMPLES),
    }


@require_GET
def experiments(request: HttpRequest) -> HttpResponse:
    text = example_text(request.GET.get("example", "gates"))
    return render(request, "dashboard/whatif.html", _list_context(request, text))


@login_required
@require_POST
def start(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("spec", "")
    try:
        spec = loads(text, source="the experiment")
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
