"""The demo scenario in process, for the browser walk and the screenshots.

A simulated cluster on virtual time (ending now, so pages read it as current), Sluice's webhook
on a live server admitting its pods, and a real SchedulerService acting on it. Each step runs
one second of simulation and one cycle; the reports are kept so each test can store them into
its own, fresh, database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from django.test import override_settings

from dashboard import kube
from dashboard.tasks.history import store_cycle_report
from scheduler.config import default_config
from simcluster.scenario import SCENARIO_DIR
from tests.e2e import harness

# Long enough for every state at once: notebooks gated, too-big unschedulable, highmem pods
# waiting for a node (60 s to provision), the web gang arriving at 30 s.
DEMO_SECONDS = 45


@contextmanager
def demo_cluster(
    webhook_url: str, kubeconfig: Path, seconds: int = DEMO_SECONDS
) -> Iterator[harness.Harness]:
    """The demo after ``seconds`` of simulated time, with Django pointed at its API server."""
    scenario = yaml.safe_load((SCENARIO_DIR / "demo.yaml").read_text())
    # As `make run` once its first capacity snapshot is stored: the admission check is off
    # (the dashboard's default, SLUICE_ADMISSION_CHECK) but every workload's risk is computed.
    config = default_config().with_action_arguments("enqueue", admissionCheck=False)
    previous, harness.START = harness.START, float(int(time.time()) - seconds)
    try:
        demo = harness.Harness(
            scenario, autoscaler="cluster-autoscaler", webhook_url=webhook_url, config=config
        )
    finally:
        harness.START = previous
    demo.server.write_kubeconfig(kubeconfig)
    demo.attach_admission()
    try:
        # act: the demo gates, binds and evicts; the pages offer what act mode offers
        with override_settings(SLUICE_KUBECONFIG=str(kubeconfig), SLUICE_MODE="act"):
            kube.api_client.cache_clear()  # the webhook reads namespace labels through it
            demo.step(seconds)
            yield demo
    finally:
        kube.api_client.cache_clear()
        demo.close()


def store_reports(demo: harness.Harness) -> None:
    """Feed every cycle so far to the history storage, as the Celery task would."""
    for report in demo.reports:
        store_cycle_report(report.to_json())
