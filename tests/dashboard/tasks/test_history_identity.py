"""A cycle is its cluster and its start, and the database enforces it (migration 0008): a report
stored again (a task redelivered after its worker was killed, two workers) is one cycle, and
two clusters' cycles that start at the same instant are two."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction

from dashboard.models import Cycle, PodTransition, QueueSample
from dashboard.tasks.history import store_cycle_report
from tests.builders import T0, cycle_report, transition

pytestmark = pytest.mark.django_db


def test_two_clusters_cycles_starting_at_the_same_instant_are_two_cycles():
    first = store_cycle_report(cycle_report(T0, cluster="uid-a"))
    second = store_cycle_report(cycle_report(T0, cluster="uid-b"))

    assert first is not None and second is not None and first != second
    assert sorted(Cycle.objects.values_list("cluster", flat=True)) == ["uid-a", "uid-b"]
    assert QueueSample.objects.count() == 2


def test_the_same_report_stored_again_is_one_cycle_with_its_rows_once():
    report = cycle_report(T0, cluster="uid-a", transitions=[transition("nb-3", node="cpu-1")])

    assert store_cycle_report(report) is not None
    assert store_cycle_report(report) is None

    assert Cycle.objects.count() == 1
    assert QueueSample.objects.count() == 1
    assert PodTransition.objects.count() == 1


def test_the_database_refuses_a_second_row_for_one_cluster_and_start():
    """Not only the check before the insert: a row written by another worker between that check
    and this insert is refused by the unique constraint."""
    at = datetime.fromtimestamp(T0, tz=UTC)
    Cycle.objects.create(started_at=at, duration_ms=1, mode="act", cluster="uid-a")

    with pytest.raises(IntegrityError), transaction.atomic():
        Cycle.objects.create(started_at=at, duration_ms=2, mode="act", cluster="uid-a")
    Cycle.objects.create(started_at=at, duration_ms=3, mode="act", cluster="uid-b")

    assert Cycle.objects.count() == 2
