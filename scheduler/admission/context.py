"""The node-capacity check as the scheduler sees it: a long-lived ``Admission`` and, per cycle,
an ``AdmissionContext`` that the loop hands to the check's plugin.

``Admission`` lives as long as the SchedulerService: it holds the checker (whose Retry state
must survive between cycles), the ledger of what was admitted since the snapshot was taken,
the snapshot source, the node groups and the risk cache. Each cycle it hands out a context
with the snapshot of the moment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.admission.check import AdmissionChecker, CheckResult
from scheduler.admission.ledger import AdmittedLedger
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.admission.node_groups import NodeGroup
from scheduler.config import EnqueueArguments, SchedulerConfig

SnapshotSource = Callable[[], CapacitySnapshot | None]
NodeGroupSource = Callable[[CapacitySnapshot], Sequence[NodeGroup]]
DEFAULT_REFRESH_REQUEST_S = 10.0


@dataclass
class AdmissionContext:
    """What one cycle knows about node capacity, and what enqueue decided with it."""

    checker: AdmissionChecker
    snapshot: CapacitySnapshot | None  # as the resource monitor took it
    enabled: bool = True  # False: risks only, the check never holds a workload
    node_groups: Sequence[NodeGroup] = ()
    risk_cache: dict = field(default_factory=dict)  # podgroup uid -> (key, WorkloadRisk)
    request_snapshot: Callable[[], None] = lambda: None
    results: dict[str, CheckResult] = field(default_factory=dict)  # this cycle's checks
    ledger: AdmittedLedger = field(default_factory=AdmittedLedger)

    def available(
        self, without: Collection[str] = (), workload: str = ""
    ) -> CapacitySnapshot | None:
        """The snapshot minus what was admitted since it was taken (but the pods ``without``
        and the room held for ``workload``, the one being evaluated); None without a
        snapshot."""
        if self.snapshot is None:
            return None
        return self.ledger.available(self.snapshot, without, workload)


class Admission:
    """The check's long-lived state; ``context()`` once per cycle."""

    def __init__(
        self,
        snapshot_source: SnapshotSource,
        *,
        arguments: EnqueueArguments | None = None,
        node_groups: NodeGroupSource | None = None,
        request_refresh: Callable[[], None] | None = None,
        refresh_request_interval_s: float = DEFAULT_REFRESH_REQUEST_S,
    ) -> None:
        self.arguments = arguments or EnqueueArguments()
        self.checker = AdmissionChecker(
            retry_after_s=self.arguments.retry_after_s,
            admit_unknown=self.arguments.admit_unknown,
            max_snapshot_age_s=self.arguments.max_snapshot_age_s,
        )
        self.snapshot_source = snapshot_source
        self.node_groups = node_groups
        self.request_refresh = request_refresh
        self.refresh_request_interval_s = refresh_request_interval_s
        self.risk_cache: dict = {}
        self.ledger = AdmittedLedger()
        self._last_request = float("-inf")
        self._groups: tuple[CapacitySnapshot | None, Sequence[NodeGroup]] = (None, ())

    @classmethod
    def for_config(
        cls, config: SchedulerConfig, snapshot_source: SnapshotSource, **kwargs: Any
    ) -> Admission:
        return cls(snapshot_source, arguments=config.enqueue_arguments(), **kwargs)

    def configure(self, arguments: EnqueueArguments) -> None:
        """New enqueue arguments (a reloaded configuration); what the checker remembers of
        each workload is kept."""
        if arguments == self.arguments:
            return
        self.arguments = arguments
        self.checker.configure(
            retry_after_s=arguments.retry_after_s,
            admit_unknown=arguments.admit_unknown,
            max_snapshot_age_s=arguments.max_snapshot_age_s,
        )

    def context(self) -> AdmissionContext:
        snapshot = self.snapshot_source()
        if snapshot is None:
            self._request_snapshot()
        return AdmissionContext(
            self.checker,
            snapshot,
            enabled=self.arguments.admission_check,
            node_groups=self._groups_for(snapshot),
            risk_cache=self.risk_cache,
            request_snapshot=self._request_snapshot,
            ledger=self.ledger,
        )

    def _groups_for(self, snapshot: CapacitySnapshot | None) -> Sequence[NodeGroup]:
        """Node groups sized for ``snapshot``, worked out once per snapshot."""
        if self.node_groups is None or snapshot is None:
            return ()
        if self._groups[0] is not snapshot:
            self._groups = (snapshot, self.node_groups(snapshot))
        return self._groups[1]

    def _request_snapshot(self) -> None:
        """Ask for a snapshot "on demand", at most once per ``refresh_request_interval_s``."""
        if self.request_refresh is None:
            return
        now = time.monotonic()
        if now - self._last_request >= self.refresh_request_interval_s:
            self._last_request = now
            self.request_refresh()
