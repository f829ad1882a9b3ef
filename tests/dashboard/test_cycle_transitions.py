"""A page of cycles reads each cycle's first transitions and their count in two queries, as
rows, whatever the cycles hold (a backlog's cycles move thousands of pods each), and the
result is what reading every transition would give: the first five by id (those of the pod
a filter names first), the count of all."""

from __future__ import annotations

import time

import pytest

from dashboard.models import Cycle, PodTransition
from dashboard.selectors.cycles import (
    SHOWN_FIELDS,
    CycleFilter,
    cycle_list,
    cycle_transitions,
)
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import TransitionKind
from tests.builders import cycle_report, transition

pytestmark = pytest.mark.django_db


def _store(sizes: list[int]) -> list[int]:
    now = time.time() - len(sizes)
    ids = []
    for c, size in enumerate(sizes):
        moved = [
            transition(f"job-{c}-{i:03d}", TransitionKind.ALLOCATED, f"n{i % 3}", f"m{i}",
                       ns="batch")
            for i in range(size)
        ]  # fmt: skip
        ids.append(store_cycle_report(cycle_report(now + c, transitions=moved)))
    return ids


def _reference(ids: list[int], pod: str = "") -> dict[int, tuple[list[tuple], int]]:
    """Every transition read, sorted and cut in Python."""
    rows: dict[int, list[PodTransition]] = {}
    for t in PodTransition.objects.filter(cycle_id__in=ids).order_by("id"):
        rows.setdefault(t.cycle_id, []).append(t)

    def named_first(t: PodTransition) -> tuple[int, int]:
        return (0 if pod and (pod.lower() in t.name.lower() or t.uid == pod) else 1), t.id

    return {
        c: ([tuple(getattr(t, f) for f in SHOWN_FIELDS) for t in sorted(ts, key=named_first)[:5]],
            len(ts))
        for c, ts in rows.items()
    }  # fmt: skip


def _got(result) -> dict[int, tuple[list[tuple], int]]:
    return {c: ([tuple(t) for t in v.shown], v.total) for c, v in result.items()}


@pytest.mark.parametrize("pod", ["", "job-1-03", "JOB-2-0", "uid-job-0-001", "nothing"])
def test_first_transitions_and_counts_are_those_of_every_transition(pod):
    ids = _store([3, 40, 0, 7, 1])

    result = cycle_transitions(ids, pod=pod)

    assert _got(result) == _reference(ids, pod)
    assert sorted(result) == sorted(c for c, n in zip(ids, [3, 40, 0, 7, 1], strict=True) if n)
    assert result[ids[1]].more == 35


def test_two_queries_whatever_the_cycles_hold(django_assert_num_queries):
    ids = _store([300, 250, 2])
    with django_assert_num_queries(2):
        result = cycle_transitions(ids)
    assert [result[c].total for c in ids] == [300, 250, 2]
    assert [t.name for t in result[ids[0]].shown] == [f"job-0-{i:03d}" for i in range(5)]


def test_a_page_of_cycles_reads_no_json_column():
    """The page shows start, duration, mode, decisions and the error: the counts, action
    durations, gates and notices (JSON, decoded for every row read) stay in the database."""
    _store([1, 1])
    page = cycle_list(filters=CycleFilter())
    deferred = page.object_list[0].get_deferred_fields()
    json_fields = {f.name for f in Cycle._meta.fields if f.get_internal_type() == "JSONField"}
    assert json_fields and json_fields <= deferred
    assert len(page.object_list) == 2 and page.object_list[0].mode == "act"
