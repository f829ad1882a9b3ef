"""The node-capacity admission check, with Kueue's admission-check states.

The enqueue action (PodGroup Pending -> Inqueue) asks ``AdmissionChecker.check(...)`` for a
PodGroup that already passed its queue's capability check:

* ``Ready``   — admit (move to Inqueue). The workload fits, or it is not Guaranteed (the KEP
  admits those unchecked), or it has neither pods nor ``minResources`` (nothing to judge), or
  the verdict is unknown and ``admit_unknown`` is set. A PodGroup with fewer pods than its
  ``minMember`` — created before its pods — is judged on its ``minResources`` as well
  (``scheduler.admission.awaited``).
* ``Retry``   — keep the PodGroup Pending; do not evaluate again before ``retry_at``
  (default 60 s later). Calls before then return the same result without work.
* ``Pending`` — not decided yet: no snapshot, or a snapshot older than ``max_snapshot_age_s``.

Every result carries the PodGroup condition to set and, when the state or reason changed, the
event to record, so repeated retries do not flood the event stream. State is kept in memory,
keyed by PodGroup uid; call ``forget(uid)`` when the PodGroup is deleted or admitted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from scheduler.admission.awaited import Awaited, check_workload
from scheduler.admission.evaluator import DEFAULT_BUDGET_S, Evaluation, Verdict
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.api.report import CheckState

CHECK_NAME = "ReduceFalseAdmissions"  # the admission check's name in Kueue KEP-3211
CONDITION_TYPE = "NodeCapacityAvailable"
DEFAULT_RETRY_AFTER_S = 60.0
# Why a workload was admitted unchecked: not Guaranteed (the KEP), or nothing to judge.
_UNCHECKED = {"skipped": "NotGuaranteed", "empty": "NothingToCheck"}


_CONDITION_STATUS = {
    CheckState.READY: "True",
    CheckState.RETRY: "False",
    CheckState.PENDING: "Unknown",
}


@dataclass(frozen=True)
class CheckResult:
    state: CheckState
    reason: str  # CamelCase, for the condition and the event
    message: str
    since: datetime  # when the state last changed (the condition's lastTransitionTime)
    retry_at: datetime | None = None
    evaluation: Evaluation | None = None
    changed: bool = True  # state or reason differs from the previous call: record the event

    @property
    def admit(self) -> bool:
        return self.state is CheckState.READY

    def condition(self) -> dict[str, str]:
        """An entry for the PodGroup's ``status.conditions``."""
        return {
            "type": CONDITION_TYPE,
            "status": _CONDITION_STATUS[self.state],
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.since.isoformat().replace("+00:00", "Z"),
        }

    def event(self) -> dict[str, str] | None:
        """A Kubernetes event (type, reason, message) for the PodGroup, or None if unchanged."""
        if not self.changed:
            return None
        kind = "Warning" if self.state is CheckState.RETRY else "Normal"
        return {"type": kind, "reason": self.reason, "message": self.message}


class AdmissionChecker:
    """Admission-check state per PodGroup uid; one instance lives as long as the scheduler."""

    def __init__(
        self,
        *,
        retry_after_s: float = DEFAULT_RETRY_AFTER_S,
        budget_s: float = DEFAULT_BUDGET_S,
        admit_unknown: bool = False,
        max_snapshot_age_s: float | None = None,
    ) -> None:
        self.budget_s = budget_s
        self.configure(
            retry_after_s=retry_after_s,
            admit_unknown=admit_unknown,
            max_snapshot_age_s=max_snapshot_age_s,
        )
        self._results: dict[str, CheckResult] = {}

    def configure(
        self, *, retry_after_s: float, admit_unknown: bool, max_snapshot_age_s: float | None
    ) -> None:
        self.retry_after = timedelta(seconds=retry_after_s)
        self.admit_unknown = admit_unknown
        self.max_snapshot_age = (
            None if max_snapshot_age_s is None else timedelta(seconds=max_snapshot_age_s)
        )

    def check(
        self,
        podgroup: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        snapshot: CapacitySnapshot | None,
        now: datetime,
        awaited: Awaited | None = None,
    ) -> CheckResult:
        """The check's state for this PodGroup now; evaluates only when a decision is due.
        ``pods`` are its pods still to place; ``awaited`` what it needs beyond the pods that
        exist (a PodGroup created before its pods), judged on its minResources."""
        uid = _uid(podgroup)
        previous = self._results.get(uid)
        if previous is not None and _still_valid(previous, now):
            result = replace(previous, changed=False)
        else:
            result = self._decide(pods, awaited, snapshot, now)
            if previous is not None and (previous.state, previous.reason) == (
                result.state,
                result.reason,
            ):
                result = replace(result, since=previous.since, changed=False)
        self._results[uid] = result
        return result

    def state_of(self, uid: str) -> CheckResult | None:
        return self._results.get(uid)

    def forget(self, uid: str) -> None:
        self._results.pop(uid, None)

    def retain(self, uids: Collection[str]) -> None:
        """Forget every PodGroup not in ``uids`` (the ones that still exist)."""
        for uid in [u for u in self._results if u not in uids]:
            del self._results[uid]

    def _decide(
        self,
        pods: Sequence[Mapping[str, Any]],
        awaited: Awaited | None,
        snapshot: CapacitySnapshot | None,
        now: datetime,
    ) -> CheckResult:
        if snapshot is None:
            text = "waiting for the first node-capacity snapshot"
            return CheckResult(CheckState.PENDING, "WaitingForSnapshot", text, now)
        age = now - snapshot.last_check
        if self.max_snapshot_age is not None and age > self.max_snapshot_age:
            text = f"node-capacity snapshot is {age.total_seconds():.0f} s old; waiting for a fresh one"
            return CheckResult(CheckState.PENDING, "SnapshotStale", text, now)
        evaluation = check_workload(pods, awaited, snapshot, budget_s=self.budget_s)
        return self._result_for(evaluation, now)

    def _result_for(self, evaluation: Evaluation, now: datetime) -> CheckResult:
        if evaluation.fits:
            reason = (
                "NodeCapacityAvailable"
                if evaluation.checked
                else _UNCHECKED.get(evaluation.method, "NotGuaranteed")
            )
            return CheckResult(
                CheckState.READY, reason, evaluation.explanation, now, None, evaluation
            )
        if evaluation.verdict is Verdict.UNKNOWN and self.admit_unknown:
            text = f"admitted although undecided: {evaluation.explanation}"
            return CheckResult(CheckState.READY, "NodeCapacityUnknown", text, now, None, evaluation)
        reason = (
            "InsufficientNodeCapacity"
            if evaluation.verdict is Verdict.CANNOT_FIT
            else "NodeCapacityUnknown"
        )
        retry_at = now + self.retry_after
        text = f"{evaluation.explanation}; retrying in {self.retry_after.total_seconds():g} s"
        return CheckResult(CheckState.RETRY, reason, text, now, retry_at, evaluation)


def _uid(podgroup: Mapping[str, Any]) -> str:
    meta = podgroup.get("metadata") or {}
    uid = meta.get("uid")
    if not uid:
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"
        raise ValueError(f"podgroup {name}: metadata.uid: required to track the admission check")
    return uid


def _still_valid(previous: CheckResult, now: datetime) -> bool:
    """Ready stays Ready; a Retry holds until its retry time; Pending is re-checked at once."""
    if previous.state is CheckState.READY:
        return True
    return (
        previous.state is CheckState.RETRY
        and previous.retry_at is not None
        and now < previous.retry_at
    )
