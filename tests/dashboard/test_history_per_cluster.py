"""Each cluster's history on its own clock (README, History: "the pages show the latest
report's cluster only"): the banner judges the current cluster's scheduler, by its clock or,
when the web's clock is not the cluster's, by when its reports were stored; a queue's samples
are its cluster's."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from dashboard.models import Cycle, QueueSample
from dashboard.selectors.cycles import current_cluster, cycle_failure
from dashboard.selectors.live import live_summary
from dashboard.selectors.queues import queue_series
from dashboard.selectors.sampling import RANGES
from dashboard.selectors.scheduler_state import scheduler_state
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import CycleReport
from tests.builders import cycle_report, queue_report

pytestmark = pytest.mark.django_db


def good(at: float, cluster: str, cpu: float = 4) -> dict:
    return cycle_report(
        at, cluster=cluster, queues=[queue_report("research", allocated=cpu, running=1)]
    )


def failed(at: float, cluster: str) -> dict:
    report = CycleReport.failed(at, 0.004, "act", OverflowError("int too large"))
    report.cluster = cluster
    return report.to_json()


def test_a_cluster_ahead_of_the_web_s_clock_is_aged_by_when_its_reports_were_stored():
    """A cluster run sped up is an hour ahead of the web's clock (no kubeconfig: the wall
    clock). Its cycle is "in the future": aged by when it was stored, it is fresh at first and
    stale 10 minutes after it was stored — never clamped to zero for ever."""
    now = time.time()
    store_cycle_report(good(now + 3600, "sped-up"))
    wall = timezone.now()

    assert not scheduler_state(wall).stale
    Cycle.objects.update(stored_at=wall - timedelta(minutes=10))  # stored 10 minutes ago
    state = scheduler_state(wall)
    assert state.stale
    assert state.age == pytest.approx(timedelta(minutes=10), abs=timedelta(seconds=5))


def test_the_banner_judges_the_current_cluster_whatever_the_other_s_clock():
    """Cluster A's latest cycle failed, an hour ahead of cluster B's clock; B replaced it and
    its cycles succeed: no failure is said (A's failed cycle is not B's latest), and B's
    failure, when it comes, is counted in B's cycles only."""
    now = time.time()
    store_cycle_report(good(now + 3598, "a"))
    store_cycle_report(failed(now + 3599, "a"))
    store_cycle_report(good(now - 1, "b"))

    assert current_cluster() == "b"
    assert live_summary().cluster == "b"
    assert scheduler_state(timezone.now()).failure is None

    store_cycle_report(failed(now, "b"))
    failure = scheduler_state(timezone.now()).failure
    assert failure is not None
    assert (failure.in_a_row, failure.last_success.timestamp()) == (1, pytest.approx(now - 1))
    assert cycle_failure("a") is not None  # A's own history still says A's last cycle failed


def test_a_late_report_of_a_cluster_is_history_within_that_cluster_only():
    """A report older (by its cluster's clock) than one stored of the same cluster is history;
    the cluster's newest report is current even though another cluster's cycles are later."""
    now = time.time()
    store_cycle_report(good(now + 3600, "a"))
    store_cycle_report(good(now + 10, "b", cpu=2))
    store_cycle_report(good(now + 5, "b", cpu=3))  # late: B already reported at now + 10

    assert live_summary().cluster == "b"
    assert live_summary().queue("research").allocated == {"cpu": 2000}


def test_a_queue_s_samples_carry_their_cluster_and_the_series_reads_one_cluster():
    now = time.time()
    store_cycle_report(good(now - 20, "a", cpu=6))
    store_cycle_report(good(now - 10, "b", cpu=4))
    store_cycle_report(good(now - 5, "b", cpu=4))

    assert sorted(QueueSample.objects.values_list("cluster", flat=True)) == ["a", "b", "b"]
    series = queue_series("research", RANGES["hour"], timezone.now(), cluster="b")
    assert [s["allocated"]["cpu"] for s in series] == [4000, 4000]
    assert len(queue_series("research", RANGES["hour"], timezone.now())) == 3  # every cluster
