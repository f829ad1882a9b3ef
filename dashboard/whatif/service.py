"""Run a stored experiment and keep its results (the Celery task and ``manage.py whatif``
both come here)."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from dashboard.whatif import runner
from dashboard.whatif.models import Experiment, VariantResult
from dashboard.whatif.spec import Spec, loads

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 0.3  # wall seconds between progress writes (and cancel checks)


def create(spec: Spec) -> Experiment:
    return Experiment.objects.create(
        name=spec.name, spec=spec.to_yaml(), total=spec.cycles * len(spec.variants)
    )


def execute(experiment_id: int) -> Experiment:
    """Play the experiment's variants, writing progress as it goes; a cancel request stops it
    at the next cycle. Its results replace any it had."""
    experiment = Experiment.objects.get(pk=experiment_id)
    if experiment.status not in (Experiment.Status.QUEUED, Experiment.Status.RUNNING):
        return experiment  # cancelled before a worker took it, or already played
    spec = loads(experiment.spec, source=f"experiment {experiment.pk}")
    started = time.perf_counter()
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.RUNNING, total=spec.cycles * len(spec.variants), done=0
    )
    last = [0.0]

    def progress(index: int, cycle: int, cycles: int) -> bool:
        now = time.perf_counter()
        if now - last[0] < PROGRESS_EVERY_S and cycle not in (0, cycles):
            return False
        last[0] = now
        Experiment.objects.filter(pk=experiment.pk).update(
            done=index * cycles + cycle, current=spec.variants[index].name
        )
        return Experiment.objects.filter(pk=experiment.pk, cancel_requested=True).exists()

    try:
        results = runner.run(spec, progress)
    except runner.Cancelled:
        Experiment.objects.filter(pk=experiment.pk).update(
            status=Experiment.Status.CANCELLED, finished_at=timezone.now(), current=""
        )
        return Experiment.objects.get(pk=experiment.pk)
    except Exception as exc:
        log.exception("what-if experiment %s failed", experiment.pk)
        Experiment.objects.filter(pk=experiment.pk).update(
            status=Experiment.Status.FAILED, error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )  # fmt: skip
        return Experiment.objects.get(pk=experiment.pk)
    store_results(experiment, results)
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.DONE,
        done=spec.cycles * len(spec.variants),
        current="",
        finished_at=timezone.now(),
        wall_seconds=round(time.perf_counter() - started, 3),
    )
    return Experiment.objects.get(pk=experiment.pk)


@transaction.atomic
def store_results(experiment: Experiment, results: list[dict]) -> None:
    experiment.results.all().delete()
    VariantResult.objects.bulk_create(
        VariantResult(
            experiment=experiment,
            position=i,
            name=r["name"],
            description=r["description"],
            summary=r["summary"],
            by_queue=r["by_queue"],
            samples=r["samples"],
            pods=r["pods"],
            scale_ups=r["scale_ups"],
            evictions=r["evictions"],
            wall_seconds=r["wall_seconds"],
        )
        for i, r in enumerate(results)
    )


def request_cancel(experiment: Experiment) -> None:
    """Ask the running task to stop; one no worker took yet is cancelled at once."""
    Experiment.objects.filter(pk=experiment.pk).update(cancel_requested=True)
    Experiment.objects.filter(pk=experiment.pk, status=Experiment.Status.QUEUED).update(
        status=Experiment.Status.CANCELLED, finished_at=timezone.now()
    )
