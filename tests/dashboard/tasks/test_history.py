"""Storing CycleReports: one row per cycle, a sample per queue, a row per transition, the live
state replaced; idempotent per cycle start; pruning by retention; chart downsampling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.models import Cycle, LiveState, PodTransition, QueueSample, TrackedPod
from dashboard.selectors.cycles import cycle_series
from dashboard.selectors.live import live_summary, live_waiting
from dashboard.selectors.queues import queue_series
from dashboard.selectors.sampling import RANGES, bucket_level
from dashboard.tasks.history import prune_history, store_cycle_report
from scheduler.api.report import RiskClass
from tests.builders import T0, cycle_report, queue_report, risk, transition, waiting_pod

pytestmark = pytest.mark.django_db


def test_a_report_becomes_a_cycle_samples_transitions_and_live_state():
    report = cycle_report(
        queues=[
            queue_report("research", allocated=4, running=4, gated=2),
            queue_report("batch", allocated=6),
        ],
        waiting=[waiting_pod("nb-4", "research", gated=True, reason="queue research is full")],
        transitions=[transition("nb-3", node="cpu-1", reason="allocated")],
    )

    cycle_id = store_cycle_report(report)

    cycle = Cycle.objects.get(id=cycle_id)
    assert cycle.started_at == datetime.fromtimestamp(T0, tz=UTC)
    assert cycle.duration_ms == pytest.approx(12.0)
    assert cycle.decisions == 1
    assert cycle.counts["running"] == 4 and cycle.counts["gated"] == 2
    assert cycle.action_durations_ms["allocate"] == pytest.approx(10.0)
    research = QueueSample.objects.get(queue="research")
    assert research.share == pytest.approx(1.0)  # the engine's figure, stored as reported
    assert QueueSample.objects.get(queue="batch").share == pytest.approx(1.5)
    stored = PodTransition.objects.get()
    assert (stored.kind, stored.to_state) == ("allocated", "binding")
    assert TrackedPod.objects.get(uid="uid-nb-3").node == "cpu-1"
    summary = live_summary()
    assert [q.name for q in summary.queues] == ["research", "batch"]
    assert summary.queues[1].over_deserved is True
    assert summary.gated_by_namespace == {"research": 1}
    assert [p.name for p in live_waiting("research")] == ["nb-4"]


def test_the_dashboard_stores_the_engines_share_and_never_recomputes_it():
    # A queue without deserved: whatever share the engine reports is what is stored and shown.
    store_cycle_report(
        cycle_report(queues=[queue_report("q", allocated=3, deserved=0, share=0.75)])
    )

    assert QueueSample.objects.get(queue="q").share == 0.75
    assert live_summary().queues[0].share == 0.75


def test_storing_the_same_cycle_twice_changes_nothing():
    report = cycle_report(transitions=[transition("nb-3", node="cpu-1")])

    first = store_cycle_report(report)
    second = store_cycle_report(report)

    assert first is not None and second is None
    assert Cycle.objects.count() == 1
    assert QueueSample.objects.count() == 1
    assert PodTransition.objects.count() == 1


def test_waiting_pods_cost_no_history_rows_cycle_after_cycle():
    pods = [waiting_pod(f"nb-{i}", "research", gated=True, reason="full") for i in range(50)]

    for i in range(3):
        store_cycle_report(cycle_report(T0 + i, waiting=pods))

    assert PodTransition.objects.count() == 0  # no creation time said: no "created" either
    assert TrackedPod.objects.count() == 50  # one current state per pod, not per cycle
    assert len(live_waiting("research")) == 50


def test_a_transition_is_stored_under_the_queue_the_engine_names():
    # The pod no longer waits once bound: the transition itself says which queue it was in.
    bound = transition("nb-4", node="cpu-2", ns="research", queue="batch")

    store_cycle_report(cycle_report(T0 + 1, transitions=[bound]))

    assert PodTransition.objects.get().queue == "batch"
    assert TrackedPod.objects.get().queue == "batch"


def test_live_state_forgets_queues_that_are_gone():
    store_cycle_report(cycle_report(T0, queues=[queue_report("research"), queue_report("old")]))

    store_cycle_report(cycle_report(T0 + 1, queues=[queue_report("research")]))

    assert live_waiting("old") is None
    assert set(LiveState.objects.values_list("key", flat=True)) == {"cycle", "queue:research"}


def test_a_late_report_does_not_replace_the_live_state():
    store_cycle_report(cycle_report(T0 + 5, queues=[queue_report("new")]))

    store_cycle_report(cycle_report(T0, queues=[queue_report("old")]))

    assert Cycle.objects.count() == 2
    assert [q.name for q in live_summary().queues] == ["new"]


def test_risks_are_kept_in_the_live_state():
    too_big = risk("too-big", RiskClass.FITS_NO_NODE_SHAPE, "no node shape fits 24 CPU")

    store_cycle_report(cycle_report(risks=[too_big]))

    assert live_summary().risks == [too_big]


def test_prune_deletes_history_older_than_the_retention(settings):
    settings.SLUICE_HISTORY_RETENTION_DAYS = 7
    day = 86400
    for age_days in (9, 8, 1):
        store_cycle_report(
            cycle_report(
                T0 - age_days * day,
                transitions=[transition(f"p{age_days}", node="cpu-1")],
            )
        )

    deleted = prune_history(now=T0)

    assert deleted == {"samples": 2, "transitions": 2, "pods": 2, "cycles": 2}
    assert Cycle.objects.count() == 1
    assert PodTransition.objects.get().name == "p1"


def test_prune_follows_a_shorter_retention(settings):
    settings.SLUICE_HISTORY_RETENTION_DAYS = 0.5
    store_cycle_report(cycle_report(T0 - 86400))

    prune_history(now=T0)

    assert Cycle.objects.count() == 0


@pytest.mark.parametrize(
    ("previous", "now", "level"),
    [
        (None, 0, 4),
        (1, 2, 0),  # same 10-second bucket
        (9, 10, 1),
        (59, 60, 2),
        (299, 300, 3),
        (1799, 1800, 4),
        (1801, 1811, 1),
    ],
)
def test_bucket_level_is_the_coarsest_bucket_a_cycle_opens(previous, now, level):
    at = datetime.fromtimestamp(T0 - T0 % 3600 + now, tz=UTC)
    before = None if previous is None else at - timedelta(seconds=now - previous)

    assert bucket_level(at, before) == level


def test_one_second_cycles_get_one_level_one_row_in_ten():
    base = T0 - T0 % 3600
    for i in range(60):
        store_cycle_report(cycle_report(base + i))

    levels = list(Cycle.objects.order_by("started_at").values_list("level", flat=True))

    assert sum(1 for level in levels if level >= 1) == 6
    assert levels[0] == 4


def test_a_week_of_seven_minute_cycles_charts_one_point_per_half_hour():
    base = T0 - T0 % 1800
    for i in range(0, 7 * 24 * 60, 7):  # every 7 minutes for a week: 1,440 cycles
        store_cycle_report(cycle_report(base + i * 60, queues=[queue_report("research")]))
    now = datetime.fromtimestamp(base + 7 * 86400, tz=UTC)

    week = queue_series("research", RANGES["week"], now)
    hour = queue_series("research", RANGES["hour"], now)

    assert 300 <= len(week) <= 340  # one per 30-minute bucket
    assert len(hour) == 8  # too few level-1 points in an hour: every cycle
    assert len(cycle_series(RANGES["week"], now)) == len(week)


def test_a_young_installation_charts_every_cycle_of_the_week():
    for i in range(5):
        store_cycle_report(cycle_report(T0 + i, queues=[queue_report("research")]))
    now = datetime.fromtimestamp(T0 + 10, tz=UTC)

    assert len(queue_series("research", RANGES["week"], now)) == 5


def test_a_queue_series_carries_each_cycles_cpu_figures_and_counts_in_time_order():
    store_cycle_report(cycle_report(T0 + 1, queues=[queue_report("research", allocated=2.5, reserved=1,
                                                         running=3, gated=7)]))  # fmt: skip
    store_cycle_report(cycle_report(T0, queues=[queue_report("research", allocated=1, deserved=0)]))
    now = datetime.fromtimestamp(T0 + 10, tz=UTC)

    first, second = queue_series("research", RANGES["hour"], now)

    assert first["at"] < second["at"]
    assert first["deserved"] == {"cpu": 0}  # a queue without deserved draws zero
    assert (first["allocated"], first["capability"]) == ({"cpu": 1000}, {"cpu": 8000})
    assert (second["allocated"], second["reserved"]) == ({"cpu": 2500}, {"cpu": 1000})
    assert (second["running"], second["gated"], second["unschedulable"]) == (3, 7, 0)
