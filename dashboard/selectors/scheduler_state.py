"""What the scheduler last said about itself — its latest cycle (failed or not), the mode it
ran in, the period and the configuration it reported — for the banner on every page and the
Scheduler page. Nothing here comes from the web process's own settings, which may differ from
the worker's: a figure the scheduler has not reported is shown as not reported.

The scheduler judged is the current cluster's: the cluster of the report stored last (a new
cluster, with a new kube-system, replaces the one before it). Its latest cycle is the latest by
that cluster's own clock, and its age is the web's reading of that clock (``cluster_now``, from
the kubeconfig) less the cycle's start. When the cycle is more than ``CLOCK_SKEW`` in the
future of that reading, the web's clock is not the cluster's (a simulated cluster sped up, read
on the wall clock; a kubeconfig of another cluster): its age is then the wall clock less the
time the report was stored (``Cycle.stored_at``), the one clock both processes share.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from dashboard.models import Cycle, LiveState
from dashboard.selectors.cycles import CycleFailure, current_cluster, cycle_failure
from dashboard.selectors.live import CYCLE_KEY
from scheduler.api.report import ConfigInForce

# The scheduler is said to have stopped when its latest report is older than this many of its
# periods, plus a margin (a cycle may run long; beat's messages expire after a period).
STALE_PERIODS = 10
STALE_MARGIN = timedelta(seconds=30)
# Until the scheduler reports its period, the Sluice default is assumed for staleness only.
ASSUMED_PERIOD_S = 1.0
# A cycle further than this in the future of the web's reading of the cluster's clock says the
# two clocks differ: its age is then judged by when it was stored.
CLOCK_SKEW = timedelta(seconds=5)


@dataclass(frozen=True)
class SchedulerState:
    now: datetime  # the cluster's time (a simulated cluster may run sped up)
    latest_at: datetime | None  # the latest cycle the scheduler reported, failed or not
    mode: str  # the mode that cycle ran in ("" before any)
    failure: CycleFailure | None  # set while the latest cycle failed
    config: ConfigInForce | None  # as the latest good cycle reported it
    stored_at: datetime | None = None  # when the latest cycle was stored (wall clock)
    wall_now: datetime | None = None  # the wall clock, for ``stored_at``

    @property
    def reported(self) -> bool:
        return self.latest_at is not None

    @property
    def period_s(self) -> float | None:
        """The period the scheduler reported, None when it has not."""
        return self.config.period_s if self.config is not None and self.config.period_s else None

    @property
    def scheduler_names(self) -> list[str]:
        return list(self.config.scheduler_names) if self.config is not None else []

    @property
    def stale_after(self) -> timedelta:
        period = self.period_s or ASSUMED_PERIOD_S
        return STALE_PERIODS * timedelta(seconds=period) + STALE_MARGIN

    @property
    def age(self) -> timedelta | None:
        """How long ago the latest cycle ran, by the cluster's clock — or, when the web's clock
        is not the cluster's (the cycle is in its future), since its report was stored."""
        if self.latest_at is None:
            return None
        age = self.now - self.latest_at
        if -age > CLOCK_SKEW and self.stored_at is not None and self.wall_now is not None:
            age = self.wall_now - self.stored_at
        return max(age, timedelta(0))

    @property
    def stale(self) -> bool:
        """The scheduler has not reported a cycle, good or failed, for too long."""
        age = self.age
        return age is not None and age > self.stale_after

    @property
    def age_words(self) -> str:
        return duration_words(self.age) if self.age is not None else ""


def scheduler_state(now: datetime) -> SchedulerState:
    """Three indexed reads when all is well (the current cluster, its latest cycle, the
    reported configuration)."""
    cluster = current_cluster()
    latest = (
        Cycle.objects.filter(cluster=cluster)
        .order_by("-started_at")
        .values("started_at", "failed", "mode", "stored_at")
        .first()
        if cluster is not None
        else None
    )
    if latest is None:
        return SchedulerState(now, None, "", None, None)
    raw = LiveState.objects.filter(key=CYCLE_KEY).values_list("data__config", flat=True).first()
    config = ConfigInForce.from_json(raw) if isinstance(raw, dict) else None
    failure = cycle_failure(cluster) if latest["failed"] else None
    return SchedulerState(
        now, latest["started_at"], latest["mode"], failure, config,
        stored_at=latest["stored_at"], wall_now=timezone.now(),
    )  # fmt: skip


def duration_words(delta: timedelta) -> str:
    """``3 s``, ``4 min``, ``2 h 5 min``, ``3 days``: how long ago, roughly."""
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days"
