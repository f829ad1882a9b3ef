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
# A delivery that finds its experiment "running" watches its progress this long: progress that
# moves is another worker still playing it (the broker redelivers a task still running once it
# outlives the visibility timeout, settings.py), and this delivery leaves it alone; progress
# that stands still is a worker that died mid-experiment, and this one plays it again.
STALLED_AFTER_S = 30.0


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
    if experiment.cancel_requested:  # asked to stop before this delivery: nothing to play
        Experiment.objects.filter(
            pk=experiment.pk, status__in=(Experiment.Status.QUEUED, Experiment.Status.RUNNING)
        ).update(status=Experiment.Status.CANCELLED, finished_at=timezone.now(), current="")
        return Experiment.objects.get(pk=experiment.pk)
    if experiment.status == Experiment.Status.RUNNING and not _stalled(experiment):
        return Experiment.objects.get(pk=experiment.pk)  # another worker is playing it
    spec = loads(experiment.spec, source=f"experiment {experiment.pk}")
    started = time.perf_counter()
    claimed = Experiment.objects.filter(
        pk=experiment.pk, status=experiment.status, done=experiment.done, current=experiment.current
    )
    if not claimed.update(status=Experiment.Status.RUNNING, done=0, current="", error="",
                          total=spec.cycles * len(spec.variants), finished_at=None):  # fmt: skip
        return Experiment.objects.get(pk=experiment.pk)  # another delivery took it first
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


def _stalled(experiment: Experiment) -> bool:
    """True if the running experiment's progress stands still for STALLED_AFTER_S."""
    seen = (experiment.done, experiment.current)
    deadline = time.monotonic() + STALLED_AFTER_S
    while time.monotonic() < deadline:
        time.sleep(min(1.0, STALLED_AFTER_S))
        now = Experiment.objects.filter(pk=experiment.pk).values_list("status", "done", "current")
        row = now.first()
        if row is None or row[0] != Experiment.Status.RUNNING or row[1:] != seen:
            return False
    return True


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
