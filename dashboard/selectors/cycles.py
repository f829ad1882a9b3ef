"""Cycles: the latest, a filtered page of them, and downsampled series for the charts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, Exists, F, OuterRef, Q, Subquery, When
from django.utils import timezone

from dashboard.models import Cycle, PodTransition, QueueSample
from dashboard.selectors.sampling import ChartRange, levels_from, pick_level

PAGE_SIZE = 50


@dataclass(frozen=True)
class CycleFilter:
    queue: str = ""
    pod: str = ""
    since: datetime | None = None
    until: datetime | None = None


def cycle_list(*, filters: CycleFilter, page: int | str = 1) -> Page:
    """Cycles newest first; ``queue`` keeps cycles that sampled it or moved one of its pods,
    ``pod`` those that moved a pod whose name contains it."""
    cycles = Cycle.objects.all()
    if filters.since:
        cycles = cycles.filter(started_at__gte=filters.since)
    if filters.until:
        cycles = cycles.filter(started_at__lte=filters.until)
    if filters.queue:
        cycles = cycles.filter(
            Exists(QueueSample.objects.filter(cycle=OuterRef("pk"), queue=filters.queue))
        )
    if filters.pod:
        moved = PodTransition.objects.filter(cycle=OuterRef("pk")).filter(
            Q(name__icontains=filters.pod) | Q(uid=filters.pod)
        )
        cycles = cycles.filter(Exists(moved))
    # The columns the page shows: the JSON ones (counts, action durations, gates, notices)
    # are decoded for every row read, and a page of cycles shows none of them.
    shown = cycles.only(*LISTED_FIELDS).order_by("-started_at")
    return Paginator(shown, PAGE_SIZE).get_page(page)


LISTED_FIELDS = ("id", "started_at", "duration_ms", "mode", "decisions", "error", "failed")


TRANSITIONS_SHOWN = 5  # per cycle on a page of cycles


class ShownTransition(NamedTuple):
    """A transition as a page of cycles shows it: the columns it needs, read as a row."""

    namespace: str
    name: str
    kind: str
    from_state: str
    to_state: str
    node: str
    message: str


SHOWN_FIELDS = ShownTransition._fields


@dataclass(frozen=True)
class CycleTransitions:
    """The first transitions of a cycle (those of the pods a filter names first), and how many
    the cycle made: a cycle that placed a backlog made thousands, and a page of 50 such cycles
    listing them all was megabytes of HTML and seconds of rendering."""

    shown: list[ShownTransition]
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.shown)


def cycle_transitions(
    cycle_ids: list[int], pod: str = "", limit: int = TRANSITIONS_SHOWN
) -> dict[int, CycleTransitions]:
    """Two queries whatever the page holds, each reading only what it returns: per cycle, the
    ids of its first ``limit`` transitions and their count (subqueries that seek the index on
    ``cycle_id``), then those transitions' columns, as rows rather than model instances. The
    page after the openb backlog lists cycles of 1,000-1,900 transitions each: a window
    function numbering every transition of the page's cycles read 24,000 rows for 240 (21 ms
    of SQLite, against 0.7 ms here)."""
    order = [F("id").asc()]
    if pod:
        named = Case(When(Q(name__icontains=pod) | Q(uid=pod), then=0), default=1)
        order.insert(0, named.asc())
    of_cycle = PodTransition.objects.filter(cycle_id=OuterRef("id"))
    first = of_cycle.order_by(*order).values("id")
    counted = of_cycle.order_by().values("cycle_id").annotate(n=Count("id")).values("n")
    picks = [f"pick{k}" for k in range(limit)]
    rows = (
        Cycle.objects.filter(id__in=cycle_ids)
        .order_by()
        .annotate(
            total=Subquery(counted), **{p: Subquery(first[k : k + 1]) for k, p in enumerate(picks)}
        )
        .values_list("id", "total", *picks)
    )
    firsts = {row[0]: (row[1], [t for t in row[2:] if t is not None]) for row in rows if row[1]}
    wanted = [t for _, ids in firsts.values() for t in ids]
    shown = {
        row[0]: ShownTransition._make(row[1:])
        for row in PodTransition.objects.filter(id__in=wanted).values_list("id", *SHOWN_FIELDS)
    }
    return {
        cycle: CycleTransitions([shown[t] for t in ids if t in shown], total)
        for cycle, (total, ids) in firsts.items()
    }


def cycle_series(chart_range: ChartRange, now: datetime | None = None) -> list[dict]:
    """Cycle durations and pods by state over the range, one cycle per bucket."""
    since = (now or timezone.now()) - chart_range.span
    in_range = Cycle.objects.filter(started_at__gte=since, failed=False)
    level = pick_level(chart_range, lambda lv: in_range.filter(level__in=levels_from(lv)).count())
    rows = in_range.filter(level__in=levels_from(level)).order_by()  # sorted: see queue_series
    return sorted(rows.values("started_at", "duration_ms", "counts"), key=_started_at)


def _started_at(row: dict) -> datetime:
    return row["started_at"]


def recent_cycles(limit: int = 60) -> list[Cycle]:
    return list(Cycle.objects.order_by("-started_at")[:limit])


@dataclass(frozen=True)
class CycleFailure:
    """The latest cycle failed: its error, and how long cycles have been failing."""

    at: datetime  # the latest cycle, which failed
    error: str
    since: datetime  # the first of the failed cycles in a row
    in_a_row: int
    last_success: datetime | None  # the latest cycle that did not fail, if any

    def to_json(self) -> dict:
        return {
            "failing": True,
            "latest_cycle_at": self.at.isoformat(),
            "error": self.error,
            "failing_since": self.since.isoformat(),
            "failed_cycles_in_a_row": self.in_a_row,
            "last_success_at": self.last_success.isoformat() if self.last_success else None,
        }


def current_cluster() -> str | None:
    """The cluster of the report stored last (its kube-system UID; "" when the report did not
    say), None before any. Reports are stored one at a time, so the highest id is the latest
    stored: each cluster's ``started_at`` is its own clock, and two clusters' do not compare."""
    return Cycle.objects.order_by("-id").values_list("cluster", flat=True).first()


def cycle_failure(cluster: str | None = None) -> CycleFailure | None:
    """None unless the latest cycle of ``cluster`` (default: ``current_cluster()``) failed (two
    indexed reads when all is well). A cycle that names no cluster ("") failed before the
    scheduler could learn it (no configuration, no cluster): its streak and last success are
    counted over every cluster's cycles."""
    if cluster is None:
        cluster = current_cluster()
        if cluster is None:
            return None
    own = Cycle.objects.filter(cluster=cluster)
    latest = own.order_by("-started_at").values("started_at", "failed", "error").first()
    if latest is None or not latest["failed"]:
        return None
    scope = own if cluster else Cycle.objects.all()
    good = scope.filter(failed=False).order_by("-started_at")
    last_success = good.values_list("started_at", flat=True).first()
    streak = scope.filter(failed=True)
    if last_success is not None:
        streak = streak.filter(started_at__gt=last_success)
    since = streak.order_by("started_at").values_list("started_at", flat=True).first()
    return CycleFailure(
        at=latest["started_at"],
        error=latest["error"],
        since=since or latest["started_at"],
        in_a_row=streak.count(),
        last_success=last_success,
    )


@dataclass(frozen=True)
class CycleError:
    at: datetime
    error: str
    failed: bool  # the cycle failed; else it ran and reported errors (a bind refused, …)


def latest_error() -> CycleError | None:
    """The latest cycle that failed or reported errors, however long ago."""
    row = (
        Cycle.objects.filter(Q(failed=True) | ~Q(error=""))
        .order_by("-started_at")
        .values("started_at", "error", "failed")
        .first()
    )
    if row is None:
        return None
    return CycleError(row["started_at"], row["error"], row["failed"])
