"""PodDisruptionBudgets (policy/v1) as the scheduler reads them: which pods a budget covers and
how many of them may be disrupted now.

The eviction API refuses (429) an eviction that would take a budget below its minimum; the
disruption controller publishes what is left as ``status.disruptionsAllowed``, and pods already
evicted but not yet gone are listed in ``status.disruptedPods`` (they no longer count against
the budget). Selectors follow ``metav1.LabelSelectorAsSelector``: a null selector matches no
pod, an empty one every pod of the namespace (policy/v1), an invalid requirement nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: Mapping[str, Any] | None
    allowed: int  # status.disruptionsAllowed
    disrupted: frozenset[str]  # status.disruptedPods: evicted, not gone yet

    @classmethod
    def from_object(cls, pdb: Obj) -> DisruptionBudget:
        meta = pdb.get("metadata") or {}
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        allowed = status.get("disruptionsAllowed", 0)
        if isinstance(allowed, bool) or not isinstance(allowed, int):
            raise ValueError(f"status.disruptionsAllowed: expected an integer, got {allowed!r}")
        selector = spec.get("selector")
        if selector is not None and not isinstance(selector, Mapping):
            raise ValueError(f"spec.selector: expected an object, got {selector!r}")
        disrupted = status.get("disruptedPods") or {}
        return cls(
            str(meta.get("namespace") or "default"),
            str(meta.get("name") or ""),
            selector,
            max(0, allowed),
            frozenset(disrupted) if isinstance(disrupted, Mapping) else frozenset(),
        )

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace == self.namespace and selector_matches(self.selector, labels)


def selector_matches(selector: object, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)`` (the simulated cluster's
    disruption controller and eviction subresource use it too)."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(r, labels) for r in selector.get("matchExpressions") or [])


def _requirement(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(requirement.get("key") or ""), requirement.get("operator")
    values = requirement.get("values") or []
    if operator in ("In", "NotIn") and not values:
        return False  # LabelSelectorAsSelector refuses it: the budget matches nothing
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False
