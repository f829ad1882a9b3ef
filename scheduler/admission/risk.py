"""False-admission risk for the dashboard: will this workload run, and if not, why not?

Works for pending and admitted workloads of any QoS class: pods are sized by their limits
and, where a resource has no limit, by its request; the pods a PodGroup awaits (created
before them) by its minResources (``scheduler.admission.awaited``). Pods already bound to a node are skipped
(a Guaranteed one is already counted in the snapshot). Classes, in the order they are tried:

* ``waiting_for_queue`` — the caller says the queue has no room (evaluation still attached);
* ``fits_now`` — the evaluator places every pod on today's nodes;
* ``fits_after_scale_up`` — it fits once some node group(s) grow, within their max sizes;
* ``fits_no_node_shape`` — neither today's nodes nor any allowed scale-up can hold it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.admission.awaited import Awaited, evaluate_with_awaited
from scheduler.admission.evaluator import DEFAULT_BUDGET_S, Evaluation, Verdict
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.admission.node_groups import NodeGroup
from scheduler.api.report import RiskClass


@dataclass(frozen=True)
class Risk:
    risk: RiskClass
    explanation: str
    evaluation: Evaluation  # the evaluation that decided the class
    new_nodes: dict[str, int] | None = None  # node group -> nodes the placement adds
    certain: bool = True  # False when an "unknown" verdict was involved


def assess_risk(
    pods: Sequence[Mapping[str, Any]],
    snapshot: CapacitySnapshot,
    *,
    node_groups: Sequence[NodeGroup] = (),
    queue_has_room: bool = True,
    budget_s: float = DEFAULT_BUDGET_S,
    awaited: Awaited | None = None,
) -> Risk:
    """Classify one workload; ``pods`` are its pods (bound ones are skipped), ``awaited``
    the pods its PodGroup needs that do not exist yet (judged on its minResources)."""
    unbound = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]

    def evaluate(on: CapacitySnapshot) -> Evaluation:
        return evaluate_with_awaited(
            unbound, awaited, on, basis="limits_or_requests", budget_s=budget_s
        )

    now = evaluate(snapshot)
    if not queue_has_room:
        text = f"the queue has no room for it yet; on today's nodes: {now.explanation}"
        return Risk(
            RiskClass.WAITING_FOR_QUEUE, text, now, certain=now.verdict is not Verdict.UNKNOWN
        )
    if now.fits:
        return Risk(RiskClass.FITS_NOW, now.explanation, now)
    unknown = now.verdict is Verdict.UNKNOWN
    for groups in _scale_up_options(node_groups):
        count = len(unbound) + (awaited.count if awaited is not None else 0)
        grown = _with_new_nodes(snapshot, groups, count)
        if grown is None:
            continue
        scaled = evaluate(grown)
        unknown |= scaled.verdict is Verdict.UNKNOWN
        if scaled.fits:
            added = _new_nodes_used(scaled, groups)
            if not added:  # the longer search on the bigger cluster placed it on today's nodes
                return Risk(RiskClass.FITS_NOW, scaled.explanation, scaled, certain=True)
            text = f"fits after adding {_describe(added)}; today: {now.explanation}"
            return Risk(RiskClass.FITS_AFTER_SCALE_UP, text, scaled, added, certain=not unknown)
    why = "no node group can add a node it fits" if node_groups else "no node groups to grow"
    text = f"{now.explanation}; {why}"
    return Risk(RiskClass.FITS_NO_NODE_SHAPE, text, now, certain=not unknown)


def _scale_up_options(node_groups: Sequence[NodeGroup]) -> list[list[NodeGroup]]:
    """Each group alone (the autoscaler's usual choice), then all together."""
    options = [[g] for g in node_groups]
    return options + [list(node_groups)] if len(node_groups) > 1 else options


def _with_new_nodes(
    snapshot: CapacitySnapshot, groups: list[NodeGroup], pods: int
) -> CapacitySnapshot | None:
    # A placement never needs more new nodes per group than there are pods.
    added = [n for g in groups for n in g.new_nodes(pods)]
    if not added:
        return None
    return CapacitySnapshot(snapshot.last_check, [*snapshot.nodes, *added])


def _new_nodes_used(evaluation: Evaluation, groups: list[NodeGroup]) -> dict[str, int]:
    used = set((evaluation.placement or {}).values())
    counts = {g.name: sum(1 for n in used if n.startswith(f"{g.name}-new-")) for g in groups}
    return {name: count for name, count in counts.items() if count}


def _describe(added: Mapping[str, int]) -> str:
    return ", ".join(f"{count} node(s) to group {name}" for name, count in added.items())
