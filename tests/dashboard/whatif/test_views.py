"""The what-if lab's pages through Django's test client: start (login needed), progress,
cancel, the comparison with its charts and verdict, the pods behind a figure, the export."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import User

from dashboard.celery import app as celery_app
from dashboard.whatif import service
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import loads

pytestmark = pytest.mark.django_db
GATES = Path("dashboard/whatif/examples/gates.yaml").read_text()


@pytest.fixture
def user_client(client):
    client.force_login(User.objects.create_user("ann", password="pw-ann-1"))
    return client


def test_starting_needs_a_login(client):
    response = client.post("/whatif/start/", {"spec": GATES})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not Experiment.objects.exists()
    page = client.get("/whatif/")
    assert "Log in</a> to start" in page.content.decode()


def test_a_bad_file_is_refused_with_the_reason(user_client):
    response = user_client.post("/whatif/start/", {"spec": "variants: []\nworkload: {trace: {}}"})
    assert response.status_code == 400
    assert "variants: a list of at least one variant" in response.content.decode()
    assert not Experiment.objects.exists()


def test_start_queues_the_task_and_the_list_shows_its_progress(
    user_client, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(
        celery_app, "send_task", lambda name, args, queue: sent.append((name, args, queue))
    )
    with django_capture_on_commit_callbacks(execute=True):
        with_commit = user_client.post("/whatif/start/", {"spec": GATES}, follow=True)
    experiment = Experiment.objects.get()
    assert sent == [("dashboard.tasks.run_experiment", [experiment.pk], "default")]
    assert experiment.status == Experiment.Status.QUEUED
    assert experiment.total == 60 * 2  # 300 s / 5 s, two variants
    html = with_commit.content.decode()
    assert f'hx-get="/whatif/{experiment.pk}/progress/"' in html
    assert "<progress" in html and "Cancel</button>" in html

    cancelled = user_client.post(f"/whatif/{experiment.pk}/cancel/", HTTP_HX_REQUEST="true")
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.CANCELLED
    assert 'data-status="cancelled"' in cancelled.content.decode()
    assert "hx-get" not in cancelled.content.decode()  # polling stops


def test_the_comparison_shows_charts_verdict_and_links_to_the_pods(client):
    experiment = service.create(loads(GATES))
    service.execute(experiment.pk)
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.DONE and experiment.done == experiment.total

    page = client.get(f"/whatif/{experiment.pk}/").content.decode()
    assert "gates on would have avoided 1 of 2 scale-ups (1 of 1 false)" in page
    for chart in ("whatif-nodes", "whatif-waits", "whatif-utilisation"):
        assert f'id="{chart}"' in page
    pods_link = f"/whatif/{experiment.pk}/variants/0/pods/?filter=false-scale-up"
    assert pods_link in page

    behind = client.get(pods_link).content.decode()
    assert "false scale-up" in behind and "team/batch-" in behind
    assert "team/needs-big" not in behind.split("<table")[1]  # needs-big's scale-up is real
    never = client.get(f"/whatif/{experiment.pk}/variants/1/pods/?filter=never-ran&queue=q")
    assert never.status_code == 200 and "never</td>" in never.content.decode()
    assert client.get(f"/whatif/{experiment.pk}/variants/7/pods/").status_code == 404

    exported = client.get(f"/whatif/{experiment.pk}/experiment.yaml")
    assert exported["Content-Disposition"].endswith('.yaml"')
    assert loads(exported.content.decode()) == loads(GATES)
    assert yaml.safe_load(exported.content)["seed"] == 1


def test_a_cancel_request_stops_a_running_experiment(monkeypatch):
    experiment = service.create(loads(GATES))
    Experiment.objects.filter(pk=experiment.pk).update(cancel_requested=True)
    Experiment.objects.filter(pk=experiment.pk).update(status=Experiment.Status.RUNNING)
    finished = service.execute(experiment.pk)
    assert finished.status == Experiment.Status.CANCELLED
    assert not finished.results.exists()
