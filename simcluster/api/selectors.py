"""``labelSelector`` and ``fieldSelector`` parsing and matching (the subset kubectl uses)."""

from __future__ import annotations

import re
from collections.abc import Callable

from simcluster.api.errors import bad_request

Predicate = Callable[[dict], bool]

# Field selectors kube-apiserver supports per resource (besides metadata.name/namespace).
FIELDS: dict[str, set[str]] = {
    "pods": {"spec.schedulerName", "spec.nodeName", "status.phase", "status.nominatedNodeName"},
    "events": {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    },
    "namespaces": {"status.phase"},
    "secrets": {"type"},  # pkg/registry/core/secret: SelectableFields
    "nodes": {"spec.unschedulable"},
}

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=()]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside ``in (a,b)`` value sets."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()]


def label_selector(selector: str | None) -> Predicate:
    """A predicate over objects for a label selector (=, ==, !=, in, notin, exists, !exists)."""
    tests = [_label_term(term) for term in _split_terms(selector or "")]
    if len(tests) == 1:  # the common case, without a generator per object
        (test,) = tests
        return lambda obj: test((obj.get("metadata") or {}).get("labels") or {})
    return lambda obj: all(test((obj.get("metadata") or {}).get("labels") or {}) for test in tests)


def selector_match(resource: str, labels: str | None, fields: str | None) -> Predicate | None:
    """One predicate for a list's or a watch's ``labelSelector`` and ``fieldSelector`` (both
    checked, a 400 for either's error), or None when neither selects anything: a list scans
    every object of its kind, so what runs per object is kept small."""
    by_label = label_selector(labels) if _split_terms(labels or "") else None
    by_field = field_selector(resource, fields) if _split_terms(fields or "") else None
    if by_label is None or by_field is None:
        return by_label or by_field
    return lambda obj: by_label(obj) and by_field(obj)


def equality_terms(fields: str | None) -> list[tuple[str, str]]:
    """The ``path=value`` (or ``==``) terms of a field selector, which every object the
    selector keeps satisfies: what a store index on ``path`` can answer. Terms that do not
    parse are left to ``field_selector``, which refuses them."""
    terms = []
    for term in _split_terms(fields or ""):
        match = _EQ_RE.match(term)
        if match and match.group(2) != "!=":
            terms.append((match.group(1), match.group(3)))
    return terms


def _label_term(term: str) -> Callable[[dict], bool]:
    match = _EQ_RE.match(term)
    if match:
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = _SET_RE.match(term)
    if not match:
        raise bad_request(f'unable to parse requirement: invalid label selector "{term}"')
    negated, key, op, values = match.groups()
    if op:
        members = {v.strip() for v in values.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in members
        return lambda labels: labels.get(key) not in members
    if negated:
        return lambda labels: key not in labels
    return lambda labels: key in labels


def field_selector(resource: str, selector: str | None) -> Predicate:
    """A predicate for a field selector; unsupported fields are a 400, as in kube-apiserver."""
    tests = [_field_term(resource, term) for term in _split_terms(selector or "")]
    if len(tests) == 1:
        return tests[0]
    return lambda obj: all(test(obj) for test in tests)


def _field_term(resource: str, term: str) -> Predicate:
    match = _EQ_RE.match(term)
    if not match:
        raise bad_request(f'invalid selector: "{term}"; can\'t understand "{term}"')
    path, op, value = match.groups()
    allowed = FIELDS.get(resource, set()) | {"metadata.name", "metadata.namespace"}
    if path not in allowed:
        raise bad_request(f"field label not supported: {path}")
    parts = tuple(path.split("."))
    if op == "!=":
        return lambda obj: _value(obj, parts) != value
    return lambda obj: _value(obj, parts) == value


def field_value(obj: dict, path: str) -> str:
    """The field as the selector compares it: a string, empty when missing."""
    return _value(obj, tuple(path.split(".")))


def _value(obj: dict, parts: tuple[str, ...]) -> str:
    value: object = obj
    for part in parts:
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, str):
        return value
    if parts == ("source",) and isinstance(value, dict):
        value = value.get("component")
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
