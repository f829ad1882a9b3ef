"""A redelivered ``run_experiment`` (acks_late: the broker gives it back when its worker
dies, or when it outlives the visibility timeout) plays an experiment at most once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from dashboard.whatif import service
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import loads

pytestmark = pytest.mark.django_db(transaction=True)
GATES = Path("dashboard/whatif/examples/gates.yaml").read_text()


def _one_variant() -> str:
    spec = loads(GATES)
    return spec.to_yaml().split("variants:")[0] + "variants:\n- name: only\n  gates: true\n"


@pytest.mark.parametrize("status", [Experiment.Status.DONE, Experiment.Status.CANCELLED,
                                    Experiment.Status.FAILED])  # fmt: skip
def test_a_finished_experiment_is_not_played_again(status):
    experiment = service.create(loads(_one_variant()))
    Experiment.objects.filter(pk=experiment.pk).update(status=status, done=3, current="x")
    again = service.execute(experiment.pk)
    assert (again.status, again.done, again.current) == (status, 3, "x")
    assert not again.results.exists()


def test_a_running_experiment_whose_worker_died_is_played_again_from_the_start(monkeypatch):
    monkeypatch.setattr(service, "STALLED_AFTER_S", 0.5)
    experiment = service.create(loads(_one_variant()))
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.RUNNING, done=7, current="only", error="stale"
    )
    again = service.execute(experiment.pk)
    assert again.status == Experiment.Status.DONE
    assert again.done == again.total and again.error == ""
    assert again.results.count() == 1


def test_a_running_experiment_whose_progress_moves_is_left_to_its_worker(monkeypatch):
    monkeypatch.setattr(service, "STALLED_AFTER_S", 5.0)
    experiment = service.create(loads(_one_variant()))
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.RUNNING, done=7, current="only"
    )

    def live_worker() -> None:  # another worker's progress write
        time.sleep(1.5)
        Experiment.objects.filter(pk=experiment.pk).update(done=8)

    other = threading.Thread(target=live_worker)
    other.start()
    started = time.monotonic()
    again = service.execute(experiment.pk)
    other.join()
    assert time.monotonic() - started < 4.5
    assert (again.status, again.done) == (Experiment.Status.RUNNING, 8)
    assert not again.results.exists()
