"""The Scheduler page shows the configuration the scheduler reported with its latest cycle —
not one the dashboard process reads for itself, which may differ from what runs."""

from __future__ import annotations

import time

import pytest

from dashboard.tasks.history import store_cycle_report
from scheduler import registry
from scheduler.api.report import ConfigInForce
from tests.builders import cycle_report

pytestmark = pytest.mark.django_db

CONF = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: nodeorder\n"


@pytest.fixture(autouse=True)
def no_broker(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"


def report_with(config: ConfigInForce | None) -> dict:
    data = cycle_report(time.time())
    data["config"] = config.to_json() if config else None
    return data


def test_page_shows_the_reported_source_actions_tiers_and_text(client):
    config = registry.load(CONF, source="file /etc/volcano/volcano-scheduler.conf")
    store_cycle_report(
        report_with(
            ConfigInForce(
                source=config.source,
                actions=list(config.actions),
                tiers=[[p.name for p in t] for t in config.tiers],
                text=config.to_yaml(),
                warnings=["ignored (Volcano only): nodeorder podaffinity.weight"],
            )
        )
    )
    page = client.get("/scheduler/").content.decode()

    assert "<dd>file /etc/volcano/volcano-scheduler.conf</dd>" in page
    assert "<dd>enqueue, allocate</dd>" in page
    assert "<li>gang, nodeorder</li>" in page
    assert "name: nodeorder" in page  # the YAML
    assert 'class="alert warning">ignored (Volcano only): nodeorder podaffinity.weight' in page
    assert "Configuration not loaded" not in page


def test_a_configuration_that_did_not_load_is_an_alert_next_to_the_one_in_force(client):
    store_cycle_report(
        report_with(
            ConfigInForce(
                source="file /etc/conf",
                actions=["allocate"],
                tiers=[["gang"]],
                text="actions: allocate\n",
                error="file /etc/conf: unknown action 'shuffle'; keeping the configuration in force",
            )
        )
    )
    page = client.get("/scheduler/").content.decode()

    assert 'role="alert">Configuration not loaded: file /etc/conf: unknown action' in page
    assert "<dd>allocate</dd>" in page


def test_before_a_report_carries_a_configuration_the_page_says_so(client):
    store_cycle_report(report_with(None))
    page = client.get("/scheduler/").content.decode()

    assert "has not reported its configuration yet" in page
    assert "<dt>Actions</dt>" not in page


def test_the_mode_shown_is_the_one_the_latest_cycle_ran_in(client, settings):
    settings.SLUICE_MODE = "observe"  # the web server's setting may differ from the worker's
    data = cycle_report(time.time())  # a cycle that ran in act mode
    store_cycle_report(data)
    page = client.get("/scheduler/").content.decode()
    assert "<dt>Mode</dt><dd>act</dd>" in page
