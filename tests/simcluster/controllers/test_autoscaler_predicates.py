"""The DESIGN.md predicates on hand-built pods, and what each autoscaler does with each pod."""

from __future__ import annotations

import pytest

from simcluster.autoscaler import (
    ClusterAutoscaler,
    Karpenter,
    ca_is_unschedulable,
    ca_nominated_to_existing_node,
    karpenter_is_provisionable,
)
from tests.simcluster.controllers.helpers import cluster, group, node, pod, run

# state, pod kwargs, CA scales up?, Karpenter scales up?
CASES = [
    ("unschedulable", {}, True, True),
    ("gated", {"state": "gated"}, False, False),
    ("pending without condition", {"state": "pending"}, False, False),
    ("nominated to an existing node", {"nominated": "full"}, False, False),
    ("nominated to a missing node", {"nominated": "gone"}, True, False),
    ("deleting", {"state": "deleting"}, False, True),
    ("bound", {"state": "bound", "node_name": "full"}, False, False),
    ("DaemonSet-owned", {"owner": "DaemonSet"}, True, False),
    ("Node-owned (static)", {"owner": "Node"}, True, False),
    ("ReplicaSet-owned", {"owner": "ReplicaSet"}, True, True),
]


@pytest.mark.parametrize(("label", "kwargs", "ca", "karpenter"), CASES, ids=[c[0] for c in CASES])
def test_predicates(label, kwargs, ca, karpenter):
    store, _ = cluster()
    node(store, "full", cpu="1")
    p = pod(store, "p", cpu="2", **kwargs)
    ca_candidate = ca_is_unschedulable(p) and not ca_nominated_to_existing_node(p, {"full"})
    assert ca_candidate is ca
    assert karpenter_is_provisionable(p) is karpenter


@pytest.mark.parametrize(("label", "kwargs", "ca", "karpenter"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kind", ["cluster-autoscaler", "karpenter"])
def test_scale_up_happens_only_for_pods_the_predicate_accepts(kind, label, kwargs, ca, karpenter):
    store, clock = cluster()
    node(store, "full", cpu="1")  # too small for the 2-CPU pod: only a new node helps
    pod(store, "p", cpu="2", **kwargs)
    scaler_class = ClusterAutoscaler if kind == "cluster-autoscaler" else Karpenter
    scaler = scaler_class(store, [group()])
    run(scaler.tick, clock, until=15)
    expected = ca if kind == "cluster-autoscaler" else karpenter
    assert len(scaler.ledger.scale_ups) == (1 if expected else 0), label


def test_karpenter_ignores_the_condition_status_but_ca_does_not():
    store, _ = cluster()
    p = pod(store, "p")
    p["status"]["conditions"][0]["status"] = "True"
    assert karpenter_is_provisionable(p)
    assert not ca_is_unschedulable(p)


def test_karpenter_matches_owners_on_kind_and_api_version():
    store, _ = cluster()
    p = pod(store, "p", owner="DaemonSet")
    assert not karpenter_is_provisionable(p)
    p["metadata"]["ownerReferences"][0]["apiVersion"] = "extensions/v1beta1"
    assert karpenter_is_provisionable(p)  # not apps/v1: Karpenter does not treat it as a DaemonSet
