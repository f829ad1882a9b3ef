"""The what-if lab in the system Chromium: start an experiment from the page, watch its
progress bar, open the comparison, see the charts and the verdict. The experiment runs as the
Celery task on a real worker (queue ``default``) over a real Redis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.contrib.auth.models import User
from playwright.sync_api import expect

from dashboard import tasks  # noqa: F401 - registers the tasks, as a worker's autodiscovery does
from dashboard.celery import app
from dashboard.whatif.models import Experiment

pytestmark = pytest.mark.browser

# The gate-burst example, played for longer so that its progress can be watched.
SPEC = (
    Path("dashboard/whatif/examples/gates.yaml")
    .read_text()
    .replace("horizon: 300", "horizon: 1200")
)


def use_broker(url: str) -> None:
    """Point the Celery app at ``url``, dropping connections pooled for an earlier broker."""
    app.close()
    app.amqp._producer_pool = None
    app.conf.broker_url = url


@pytest.fixture
def worker(settings, redis_url):
    settings.CELERY_BROKER_URL = redis_url
    previous = app.conf.broker_url
    use_broker(redis_url)
    with start_worker(app, pool="solo", queues=["default"], perform_ping_check=False):
        yield
    app.loader.worker_initialized = False
    use_broker(previous)


def test_start_watch_and_compare_an_experiment(live_server, page, worker):
    User.objects.create_user("wendy", password="pw-whatif-1")
    page.goto(live_server.url + "/login/?next=/whatif/")
    page.get_by_label("Username").fill("wendy")
    page.get_by_label("Password").fill("pw-whatif-1")
    page.get_by_role("button", name="Log in").click()
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="What-if lab")).to_have_attribute("aria-current", "page")

    page.get_by_label("Experiment (YAML)").fill(SPEC)
    page.get_by_role("button", name="Start the experiment").click()

    expect(page.get_by_role("status")).to_contain_text("queued")
    experiment = Experiment.objects.get()
    progress = page.locator(f"#progress-{experiment.pk}")
    bar = progress.locator("progress")
    expect(bar).to_be_visible()
    expect(progress).to_contain_text(re.compile(r"playing gates (off|on)"), timeout=30_000)
    seen = int(bar.get_attribute("value") or 0)
    assert 0 <= seen <= 480
    # htmx polls the task's progress until it is done, then offers the comparison.
    link = progress.get_by_role("link", name="Open the comparison")
    expect(link).to_be_visible(timeout=120_000)
    expect(progress.locator("[data-status]")).to_have_text("done")

    link.click()
    expect(page.get_by_role("heading", name=experiment.name)).to_be_visible()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("gates on would have avoided 1 of 2 scale-ups (1 of 1 false)")
    for chart in ("whatif-nodes", "whatif-waits", "whatif-utilisation"):
        expect(page.locator(f"#{chart}.js-plotly-plot")).to_be_visible()
    expect(page.locator("table.whatif-queues")).to_contain_text("q")

    page.locator(
        f'a[href="/whatif/{experiment.pk}/variants/0/pods/?filter=false-scale-up"]'
    ).click()
    expect(
        page.get_by_role("heading", name=re.compile("gates off: pods that triggered"))
    ).to_be_visible()
    expect(page.locator("table.whatif-pods")).to_contain_text("team/batch-")
