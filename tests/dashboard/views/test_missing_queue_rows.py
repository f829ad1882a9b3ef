"""Pods naming a queue the cycle did not have are counted on the Overview, the Queues page and
in History's pods by state (README, Queues and references that are wrong): a row of their own,
marked "does not exist" — or "cannot be used" when the Queue exists and Sluice refused it —
with the events said on the objects naming it. (Through the simulated cluster:
tests/adversary/test_part11_counts.py.)"""

from __future__ import annotations

import re
import time

import pytest

from dashboard.models import Cycle
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import InvalidObject, ObjectProblem, PodState
from scheduler.api.status import Code
from tests.builders import cycle_report, pod_record, queue_report, waiting_pod

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_cluster(settings, tmp_path):
    from dashboard import kube

    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent-kubeconfig")
    kube.api_client.cache_clear()
    yield
    kube.api_client.cache_clear()


def not_found(pod: str, queue: str, reason: str = "QueueNotFound") -> dict:
    message = f"queue {queue} does not exist: no pod of it is scheduled"
    return ObjectProblem("pod", "research", pod, "metadata.annotations", reason, message,
                         queue).to_json()  # fmt: skip


def report() -> dict:
    """Queue ``research`` runs 1 pod; ``gone`` (deleted) runs 2 and holds 1 gated; ``broken``
    exists but Sluice refused it, 1 pod of it gated."""
    data = cycle_report(
        time.time(),
        queues=[queue_report("research", allocated=1, running=1)],
        waiting=[
            waiting_pod(
                "g1",
                "gone",
                gated=True,
                reason="queue gone does not exist",
                code=Code.QUEUE_INVALID,
            ),
            waiting_pod(
                "b1",
                "broken",
                gated=True,
                reason="queue broken cannot be used",
                code=Code.QUEUE_INVALID,
            ),
        ],  # fmt: skip
        pods=[
            pod_record("r1"),
            pod_record("x1", queue="gone", node="cpu-1"),
            pod_record("x2", queue="gone", node="cpu-2"),
            pod_record("done", PodState.SUCCEEDED, queue="gone", node="cpu-2"),
        ],
    )
    data["problems"] = [not_found("g1", "gone"), not_found("b1", "broken", "QueueInvalid")]
    data["invalid"] = [
        InvalidObject("queue", "", "broken", "u-b", "spec.weight", "spec.weight: -3").to_json()
    ]
    return data


ROW = re.compile(
    r'<tr data-queue="([^"]+)">(.*?)</th>.*?<td class="num">(\d*)</td>\s*<td class="num">(\d*)</td>',
    re.S,
)


def test_the_overview_has_a_row_for_each_queue_its_pods_name_that_the_cycle_did_not_have(client):
    store_cycle_report(report())

    html = client.get("/").content.decode()
    rows = {
        name: (head, int(running or 0), int(gated or 0))
        for name, head, running, gated in ROW.findall(html)
    }

    assert {name: counts for name, (_, *counts) in rows.items()} == {
        "research": [1, 0], "broken": [0, 1], "gone": [2, 1],
    }  # fmt: skip
    assert "does not exist" in rows["gone"][0] and "cannot be used" in rows["broken"][0]
    assert 'data-reason="QueueNotFound"' not in html  # the Overview says it in one line
    assert "QueueNotFound" in html and "QueueInvalid" in html and "spec.weight: -3" in html


def test_history_counts_the_pods_of_queues_that_do_not_exist():
    store_cycle_report(report())

    counts = Cycle.objects.get().counts
    assert (counts["running"], counts["gated"]) == (3, 2)
