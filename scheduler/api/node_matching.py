"""Which nodes a pod may land on, by kube-scheduler's filter rules, over plain JSON dicts.

Covers the filters that depend only on the pod spec and the node object (not on resources):
``NodeUnschedulable``, ``NodeName``, ``TaintToleration`` and ``NodeAffinity`` (nodeSelector plus
required node affinity), in kube-scheduler's default filter order, with its failure reasons.

Semantics follow ``k8s.io/component-helpers/scheduling/corev1`` and the scheduler plugins:

* nodeSelector: every key must be a node label with exactly that value.
* required node affinity: terms are ORed; a term's matchExpressions and matchFields are ANDed;
  a term with neither matches nothing; an empty ``nodeSelectorTerms`` list matches nothing.
* ``Gt``/``Lt`` compare integers; a label that is not an integer does not match.
* only ``NoSchedule`` and ``NoExecute`` taints block; a toleration with an empty effect matches
  every effect, and an empty key with ``Exists`` tolerates every taint.

Malformed selectors and tolerations raise ``ValueError`` naming the pod/node and the field, as
the API server would reject them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_EFFECTS = frozenset({"", "NoSchedule", "PreferNoSchedule", "NoExecute"})
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_FIELD_OPERATORS = frozenset({"In", "NotIn"})
_SUPPORTED_FIELDS = frozenset({"metadata.name"})

# A canonical requirement: (key, operator, sorted values). Used both to match and to hash.
Requirement = tuple[str, str, tuple[str, ...]]
Term = tuple[tuple[Requirement, ...], tuple[Requirement, ...]]
Toleration = tuple[str, str, str, str]  # key, operator, value, effect


def _where(obj: Mapping[str, Any] | None, kind: str) -> str:
    meta = (obj or {}).get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not name:
        return kind
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _spec_of(pod_or_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accept a whole pod (``{"metadata":…, "spec":…}``) or just its spec."""
    if "spec" in pod_or_spec and isinstance(pod_or_spec.get("spec"), Mapping):
        return pod_or_spec["spec"]
    return pod_or_spec


# --- parsing into canonical, hashable form ---------------------------------------------------


def _requirement(raw: Any, *, obj: str, field: str, is_field: bool) -> Requirement:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{obj}: {field}: expected an object, got {raw!r}")
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    allowed = _FIELD_OPERATORS if is_field else _LABEL_OPERATORS
    if not isinstance(key, str) or not key:
        raise ValueError(f"{obj}: {field}.key: must be a non-empty string")
    if not isinstance(op, str) or op not in allowed:
        raise ValueError(f"{obj}: {field}.operator: {op!r} is not one of {sorted(allowed)}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{obj}: {field}.values: must be a list of strings")
    if is_field:
        if key not in _SUPPORTED_FIELDS:
            raise ValueError(f"{obj}: {field}.key: {key!r} is not a supported field")
        if len(values) != 1:
            raise ValueError(f"{obj}: {field}.values: must have exactly one element")
    elif op in ("In", "NotIn") and not values:
        raise ValueError(f"{obj}: {field}.values: must be non-empty for operator {op}")
    elif op in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"{obj}: {field}.values: must be empty for operator {op}")
    elif op in ("Gt", "Lt") and (len(values) != 1 or not _is_int(values[0])):
        raise ValueError(f"{obj}: {field}.values: {op} needs exactly one integer value")
    return key, op, tuple(sorted(set(values)))


def _term(raw: Any, *, obj: str, field: str) -> Term:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{obj}: {field}: expected an object, got {raw!r}")
    parsed: list[tuple[Requirement, ...]] = []
    for part, is_field in (("matchExpressions", False), ("matchFields", True)):
        items = raw.get(part) or []
        if not isinstance(items, list):
            raise ValueError(f"{obj}: {field}.{part}: expected a list")
        reqs = (
            _requirement(r, obj=obj, field=f"{field}.{part}[{i}]", is_field=is_field)
            for i, r in enumerate(items)
        )
        parsed.append(tuple(sorted(set(reqs))))
    return parsed[0], parsed[1]


def required_terms(pod_spec: Mapping[str, Any], *, obj: str = "pod") -> tuple[Term, ...] | None:
    """The pod's required node-affinity terms in canonical form; ``None`` when there are none."""
    spec = _spec_of(pod_spec)
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, Mapping):
        raise ValueError(f"{obj}: spec.affinity: expected an object")
    node_affinity = affinity.get("nodeAffinity") or {}
    if not isinstance(node_affinity, Mapping):
        raise ValueError(f"{obj}: spec.affinity.nodeAffinity: expected an object")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    if not isinstance(required, Mapping):
        raise ValueError(f"{obj}: {base}: expected an object")
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        terms = []  # Present but without terms: kube-scheduler matches no node.
    if not isinstance(terms, list):
        raise ValueError(f"{obj}: {base}.nodeSelectorTerms: expected a list")
    parsed = (
        _term(t, obj=obj, field=f"{base}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms)
    )
    return tuple(sorted(set(parsed)))


def node_selector(pod_spec: Mapping[str, Any], *, obj: str = "pod") -> tuple[tuple[str, str], ...]:
    selector = _spec_of(pod_spec).get("nodeSelector") or {}
    if not isinstance(selector, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in selector.items()
    ):
        raise ValueError(f"{obj}: spec.nodeSelector: must be a map of string to string")
    return tuple(sorted(selector.items()))


def tolerations(pod_spec: Mapping[str, Any], *, obj: str = "pod") -> tuple[Toleration, ...]:
    raw = _spec_of(pod_spec).get("tolerations") or []
    if not isinstance(raw, list):
        raise ValueError(f"{obj}: spec.tolerations: expected a list")
    return tuple(
        sorted({_toleration(t, obj=obj, field=f"spec.tolerations[{i}]") for i, t in enumerate(raw)})
    )


def _toleration(raw: Any, *, obj: str, field: str) -> Toleration:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{obj}: {field}: expected an object, got {raw!r}")
    key, value = raw.get("key") or "", raw.get("value") or ""
    operator, effect = raw.get("operator") or "Equal", raw.get("effect") or ""
    for name, text in (("key", key), ("value", value), ("operator", operator), ("effect", effect)):
        if not isinstance(text, str):
            raise ValueError(f"{obj}: {field}.{name}: must be a string")
    if operator not in ("Equal", "Exists"):
        raise ValueError(f"{obj}: {field}.operator: {operator!r} is not Equal or Exists")
    if effect not in _EFFECTS:
        raise ValueError(f"{obj}: {field}.effect: {effect!r} is not a taint effect")
    if operator == "Exists" and value:
        raise ValueError(f"{obj}: {field}.value: must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise ValueError(f"{obj}: {field}.operator: must be Exists when key is empty")
    return key, operator, value, effect


@dataclass(frozen=True)
class PodConstraints:
    """A pod's node constraints in canonical form: hashable, and equal for equivalent pods."""

    node_selector: tuple[tuple[str, str], ...]
    required_terms: tuple[Term, ...] | None
    tolerations: tuple[Toleration, ...]
    node_name: str = ""


def pod_constraints(pod_spec: Mapping[str, Any], *, obj: str | None = None) -> PodConstraints:
    """Parse (and validate) once; ``obj`` names the pod in errors (derived from a whole pod)."""
    obj = obj or _where(pod_spec if "spec" in pod_spec else None, "pod")
    spec = _spec_of(pod_spec)
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise ValueError(f"{obj}: spec.nodeName: must be a string")
    return PodConstraints(
        node_selector(spec, obj=obj),
        required_terms(spec, obj=obj),
        tolerations(spec, obj=obj),
        node_name,
    )


def scheduling_signature(pod_spec: Mapping[str, Any]) -> PodConstraints:
    """A hashable key equal for pods that the filters here treat identically.

    Order of selector keys, terms, requirements, values and tolerations does not matter.
    """
    return pod_constraints(pod_spec)


# --- matching --------------------------------------------------------------------------------


_INT64 = re.compile(r"[+-]?[0-9]+")


def _is_int(text: str) -> bool:
    # Go's strconv.ParseInt: optional sign, decimal digits, no spaces or underscores (and no
    # more than an int64 holds, said before Python's int() meets its 4300-digit limit).
    return (
        bool(_INT64.fullmatch(text))
        and len(text.lstrip("+-").lstrip("0")) <= 19
        and -(2**63) <= int(text) < 2**63
    )


def _label_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    key, op, values = req
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present or not _is_int(labels[key]):
        return False  # Gt/Lt on a missing or non-integer label never matches.
    threshold, actual = int(values[0]), int(labels[key])
    return actual > threshold if op == "Gt" else actual < threshold


def _field_matches(req: Requirement, node_name: str) -> bool:
    _, op, values = req
    return (node_name in values) == (op == "In")


def _term_matches(term: Term, labels: Mapping[str, str], node_name: str) -> bool:
    expressions, fields = term
    if not expressions and not fields:
        return False  # An empty term matches no objects.
    return all(_label_matches(r, labels) for r in expressions) and all(
        _field_matches(r, node_name) for r in fields
    )


def _node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ValueError(f"{_where(node, 'node')}: metadata.labels: expected a map")
    return labels


def _constraints(pod: Mapping[str, Any] | PodConstraints) -> PodConstraints:
    return pod if isinstance(pod, PodConstraints) else pod_constraints(pod)


def matches_affinity(pod: Mapping[str, Any] | PodConstraints, node: Mapping[str, Any]) -> bool:
    """kube-scheduler's NodeAffinity filter: nodeSelector AND required node affinity."""
    constraints = _constraints(pod)
    labels = _node_labels(node)
    if any(labels.get(k) != v for k, v in constraints.node_selector):
        return False
    if constraints.required_terms is None:
        return True
    name = (node.get("metadata") or {}).get("name") or ""
    return any(_term_matches(t, labels, name) for t in constraints.required_terms)


def node_taints(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    taints = (node.get("spec") or {}).get("taints") or []
    where = _where(node, "node")
    if not isinstance(taints, list):
        raise ValueError(f"{where}: spec.taints: expected a list")
    for i, taint in enumerate(taints):
        if not isinstance(taint, Mapping) or not taint.get("key"):
            raise ValueError(f"{where}: spec.taints[{i}].key: required")
        if taint.get("effect") not in _EFFECTS - {""}:
            raise ValueError(f"{where}: spec.taints[{i}].effect: {taint.get('effect')!r} invalid")
    return taints


def tolerates(toleration: Toleration, taint: Mapping[str, Any]) -> bool:
    """One toleration against one taint (component-helpers' ToleratesTaint)."""
    key, operator, value, effect = toleration
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    return operator == "Exists" or value == (taint.get("value") or "")


def untolerated_taint(
    pod: Mapping[str, Any] | PodConstraints, node: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate, else ``None``."""
    pod_tolerations = _constraints(pod).tolerations
    for taint in node_taints(node):
        if taint.get("effect") not in _BLOCKING_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in pod_tolerations):
            return taint
    return None


def taint_reason(taint: Mapping[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"


def _unschedulable_blocks(constraints: PodConstraints, node: Mapping[str, Any]) -> bool:
    if not (node.get("spec") or {}).get("unschedulable"):
        return False
    taint = {"key": UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}
    return not any(tolerates(t, taint) for t in constraints.tolerations)


def node_accepts(
    pod_spec: Mapping[str, Any] | PodConstraints, node: Mapping[str, Any]
) -> tuple[bool, str | None]:
    """Run the filters in kube-scheduler's order; the first that fails gives the reason.

    ``pod_spec`` may be a pod, its spec, or ``PodConstraints`` already parsed (faster in loops).
    """
    constraints = _constraints(pod_spec)
    if _unschedulable_blocks(constraints, node):
        return False, REASON_UNSCHEDULABLE
    if constraints.node_name and constraints.node_name != (node.get("metadata") or {}).get("name"):
        return False, REASON_NODE_NAME
    taint = untolerated_taint(constraints, node)
    if taint is not None:
        return False, taint_reason(taint)
    if not matches_affinity(constraints, node):
        return False, REASON_AFFINITY
    return True, None


def suitable_mask(
    pod_spec: Mapping[str, Any] | PodConstraints, nodes: Sequence[Mapping[str, Any]]
) -> list[bool]:
    """``node_accepts`` for every node, in order (callers cache this per signature)."""
    constraints = _constraints(pod_spec)
    return [node_accepts(constraints, node)[0] for node in nodes]
