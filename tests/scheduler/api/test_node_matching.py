"""Table-driven checks of kube-scheduler's node filters over JSON dicts."""

from __future__ import annotations

import pytest

from scheduler.api.node_matching import (
    REASON_AFFINITY,
    REASON_NODE_NAME,
    REASON_UNSCHEDULABLE,
    node_accepts,
    scheduling_signature,
    suitable_mask,
)
from tests.builders import node, pod


def required(*terms):
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def expr(key, op, *values):
    item = {"key": key, "operator": op}
    if values:
        item["values"] = list(values)
    return item


ZONE_A = {"zone": "a", "gpu-count": "8", "kubernetes.io/hostname": "n1"}

AFFINITY_CASES = [
    # (id, pod spec, node labels, node name, expected match)
    ("no constraints", {}, ZONE_A, "n1", True),
    ("selector match", {"nodeSelector": {"zone": "a"}}, ZONE_A, "n1", True),
    ("selector wrong value", {"nodeSelector": {"zone": "b"}}, ZONE_A, "n1", False),
    ("selector missing label", {"nodeSelector": {"rack": "1"}}, ZONE_A, "n1", False),
    ("selector all keys", {"nodeSelector": {"zone": "a", "gpu-count": "4"}}, ZONE_A, "n1", False),
    (
        "In match",
        required({"matchExpressions": [expr("zone", "In", "b", "a")]}),
        ZONE_A,
        "n1",
        True,
    ),
    ("In miss", required({"matchExpressions": [expr("zone", "In", "b")]}), ZONE_A, "n1", False),
    (
        "In absent label",
        required({"matchExpressions": [expr("x", "In", "a")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "NotIn match",
        required({"matchExpressions": [expr("zone", "NotIn", "b")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "NotIn miss",
        required({"matchExpressions": [expr("zone", "NotIn", "a")]}),
        ZONE_A,
        "n1",
        False,
    ),
    ("NotIn absent", required({"matchExpressions": [expr("x", "NotIn", "a")]}), ZONE_A, "n1", True),
    ("Exists", required({"matchExpressions": [expr("zone", "Exists")]}), ZONE_A, "n1", True),
    ("Exists absent", required({"matchExpressions": [expr("x", "Exists")]}), ZONE_A, "n1", False),
    (
        "DoesNotExist",
        required({"matchExpressions": [expr("x", "DoesNotExist")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "DoesNotExist present",
        required({"matchExpressions": [expr("zone", "DoesNotExist")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "Gt match",
        required({"matchExpressions": [expr("gpu-count", "Gt", "4")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "Gt equal",
        required({"matchExpressions": [expr("gpu-count", "Gt", "8")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "Lt match",
        required({"matchExpressions": [expr("gpu-count", "Lt", "9")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "Lt miss",
        required({"matchExpressions": [expr("gpu-count", "Lt", "8")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "Gt non-int label",
        required({"matchExpressions": [expr("zone", "Gt", "1")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "Gt absent label",
        required({"matchExpressions": [expr("x", "Gt", "1")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "expressions ANDed",
        required({"matchExpressions": [expr("zone", "In", "a"), expr("gpu-count", "Gt", "9")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "terms ORed",
        required(
            {"matchExpressions": [expr("zone", "In", "b")]},
            {"matchExpressions": [expr("zone", "In", "a")]},
        ),
        ZONE_A,
        "n1",
        True,
    ),
    ("empty terms list", required(), ZONE_A, "n1", False),
    ("empty term", required({}), ZONE_A, "n1", False),
    (
        "empty term ORed with match",
        required({}, {"matchExpressions": [expr("zone", "Exists")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "matchFields name In",
        required({"matchFields": [expr("metadata.name", "In", "n1")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "matchFields name In other",
        required({"matchFields": [expr("metadata.name", "In", "n2")]}),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "matchFields NotIn",
        required({"matchFields": [expr("metadata.name", "NotIn", "n2")]}),
        ZONE_A,
        "n1",
        True,
    ),
    (
        "fields ANDed with expressions",
        required(
            {
                "matchExpressions": [expr("zone", "In", "b")],
                "matchFields": [expr("metadata.name", "In", "n1")],
            }
        ),
        ZONE_A,
        "n1",
        False,
    ),
    (
        "selector AND affinity",
        {"nodeSelector": {"zone": "b"}, **required({"matchExpressions": [expr("zone", "Exists")]})},
        ZONE_A,
        "n1",
        False,
    ),
    (
        "required absent but preferred set",
        {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}},
        ZONE_A,
        "n1",
        True,
    ),
]


@pytest.mark.parametrize(
    ("spec", "labels", "name", "expected"),
    [case[1:] for case in AFFINITY_CASES],
    ids=[case[0] for case in AFFINITY_CASES],
)
def test_node_affinity_and_selector(spec, labels, name, expected):
    accepted, reason = node_accepts(spec, node(name, labels=labels))
    assert accepted is expected
    assert reason == (None if expected else REASON_AFFINITY)


def taint(key, value="", effect="NoSchedule"):
    t = {"key": key, "effect": effect}
    if value:
        t["value"] = value
    return t


def tol(key="", op=None, value=None, effect=None):
    t = {"key": key} if key else {}
    for field, v in (("operator", op), ("value", value), ("effect", effect)):
        if v is not None:
            t[field] = v
    return t


TAINT_CASES = [
    # (id, taints, tolerations, expected untolerated taint text or None)
    ("no taints", [], [], None),
    ("NoSchedule blocks", [taint("gpu", "true")], [], "{gpu: true}"),
    ("NoExecute blocks", [taint("gpu", "true", "NoExecute")], [], "{gpu: true}"),
    ("PreferNoSchedule does not block", [taint("gpu", "true", "PreferNoSchedule")], [], None),
    ("Equal match", [taint("gpu", "true")], [tol("gpu", "Equal", "true", "NoSchedule")], None),
    ("default operator Equal", [taint("gpu", "true")], [tol("gpu", value="true")], None),
    ("Equal wrong value", [taint("gpu", "true")], [tol("gpu", "Equal", "false")], "{gpu: true}"),
    ("Exists any value", [taint("gpu", "x")], [tol("gpu", "Exists")], None),
    ("wrong key", [taint("gpu", "x")], [tol("tpu", "Exists")], "{gpu: x}"),
    (
        "empty key Exists tolerates all",
        [taint("a"), taint("b", "1", "NoExecute")],
        [tol(op="Exists")],
        None,
    ),
    ("empty effect matches all", [taint("gpu", "", "NoExecute")], [tol("gpu", "Exists")], None),
    (
        "effect must match",
        [taint("gpu", "", "NoExecute")],
        [tol("gpu", "Exists", effect="NoSchedule")],
        "{gpu: }",
    ),
    ("one of two tolerated", [taint("a"), taint("b", "v")], [tol("a", "Exists")], "{b: v}"),
    ("empty value Equal", [taint("a")], [tol("a", "Equal")], None),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "untolerated"),
    [case[1:] for case in TAINT_CASES],
    ids=[case[0] for case in TAINT_CASES],
)
def test_taints_and_tolerations(taints, tolerations, untolerated):
    accepted, reason = node_accepts({"tolerations": tolerations}, node("n1", taints=taints))
    assert accepted is (untolerated is None)
    expected = None if untolerated is None else f"node(s) had untolerated taint {untolerated}"
    assert reason == expected


def test_taint_checked_before_affinity_as_kube_scheduler_orders_filters():
    spec = {"nodeSelector": {"zone": "b"}}
    accepted, reason = node_accepts(spec, node("n1", labels=ZONE_A, taints=[taint("gpu", "1")]))
    assert (accepted, reason) == (False, "node(s) had untolerated taint {gpu: 1}")


def test_unschedulable_node_rejected_unless_tolerated():
    cordoned = node("n1", unschedulable=True)
    assert node_accepts({}, cordoned) == (False, REASON_UNSCHEDULABLE)
    tolerating = {"tolerations": [tol("node.kubernetes.io/unschedulable", "Exists")]}
    assert node_accepts(tolerating, cordoned) == (True, None)


def test_node_name_pins_the_pod():
    assert node_accepts({"nodeName": "n2"}, node("n1")) == (False, REASON_NODE_NAME)
    assert node_accepts({"nodeName": "n1"}, node("n1")) == (True, None)


def test_whole_pod_accepted_as_well_as_spec():
    p = pod("p", selector={"zone": "a"})
    assert node_accepts(p, node("n1", labels=ZONE_A)) == (True, None)
    assert suitable_mask(p, [node("n1", labels=ZONE_A), node("n1", labels={})]) == [True, False]


SAME_SIGNATURE = [
    (
        "selector key order",
        {"nodeSelector": {"a": "1", "b": "2"}},
        {"nodeSelector": {"b": "2", "a": "1"}},
    ),
    (
        "values and term order",
        required(
            {"matchExpressions": [expr("z", "In", "a", "b")]},
            {"matchExpressions": [expr("y", "Exists")]},
        ),
        required(
            {"matchExpressions": [expr("y", "Exists")]},
            {"matchExpressions": [expr("z", "In", "b", "a")]},
        ),
    ),
    (
        "toleration order and default operator",
        {"tolerations": [tol("a", value="1"), tol("b", "Exists")]},
        {"tolerations": [tol("b", "Exists"), tol("a", "Equal", "1")]},
    ),
    ("no constraints vs empty fields", {}, {"nodeSelector": {}, "tolerations": []}),
]

DIFFERENT_SIGNATURE = [
    ("selector value", {"nodeSelector": {"a": "1"}}, {"nodeSelector": {"a": "2"}}),
    ("no affinity vs empty terms", {}, required()),
    (
        "toleration effect",
        {"tolerations": [tol("a", "Exists")]},
        {"tolerations": [tol("a", "Exists", effect="NoSchedule")]},
    ),
    (
        "In vs NotIn",
        required({"matchExpressions": [expr("z", "In", "a")]}),
        required({"matchExpressions": [expr("z", "NotIn", "a")]}),
    ),
]


@pytest.mark.parametrize(
    ("a", "b"), [c[1:] for c in SAME_SIGNATURE], ids=[c[0] for c in SAME_SIGNATURE]
)
def test_signature_equal_for_equivalent_pods(a, b):
    assert scheduling_signature(a) == scheduling_signature(b)
    assert hash(scheduling_signature(a)) == hash(scheduling_signature(b))


@pytest.mark.parametrize(
    ("a", "b"), [c[1:] for c in DIFFERENT_SIGNATURE], ids=[c[0] for c in DIFFERENT_SIGNATURE]
)
def test_signature_differs_for_different_constraints(a, b):
    assert scheduling_signature(a) != scheduling_signature(b)


BAD_INPUT = [
    # (id, pod spec, text the error must contain)
    (
        "unknown operator",
        required({"matchExpressions": [expr("z", "Like", "a")]}),
        "matchExpressions[0].operator",
    ),
    (
        "In without values",
        required({"matchExpressions": [expr("z", "In")]}),
        "matchExpressions[0].values",
    ),
    ("Exists with values", required({"matchExpressions": [expr("z", "Exists", "a")]}), "values"),
    ("Gt non-integer", required({"matchExpressions": [expr("z", "Gt", "x")]}), "integer"),
    ("Gt two values", required({"matchExpressions": [expr("z", "Gt", "1", "2")]}), "integer"),
    (
        "field unsupported",
        required({"matchFields": [expr("metadata.uid", "In", "x")]}),
        "matchFields[0].key",
    ),
    ("field Exists", required({"matchFields": [expr("metadata.name", "Exists")]}), "operator"),
    ("selector not strings", {"nodeSelector": {"a": 1}}, "spec.nodeSelector"),
    ("toleration operator", {"tolerations": [tol("a", "Has")]}, "spec.tolerations[0].operator"),
    (
        "toleration Exists with value",
        {"tolerations": [tol("a", "Exists", "v")]},
        "spec.tolerations[0].value",
    ),
    (
        "toleration empty key Equal",
        {"tolerations": [tol(value="v")]},
        "spec.tolerations[0].operator",
    ),
    (
        "toleration effect",
        {"tolerations": [tol("a", "Exists", effect="Never")]},
        "spec.tolerations[0].effect",
    ),
]


@pytest.mark.parametrize(
    ("spec", "text"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT]
)
def test_bad_input_names_the_field(spec, text):
    p = pod("web", namespace="ml", spec=spec)
    with pytest.raises(ValueError, match="pod ml/web") as info:
        node_accepts(p, node("n1"))
    assert text in str(info.value)


def test_bad_node_taint_names_the_node():
    bad = node("n7", taints=[{"key": "a", "effect": "Sometimes"}])
    with pytest.raises(ValueError, match=r"node n7: spec.taints\[0\].effect"):
        node_accepts({}, bad)
