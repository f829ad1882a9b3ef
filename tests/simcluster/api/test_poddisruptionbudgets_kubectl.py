"""PodDisruptionBudgets through the real kubectl: apply, get (the server's Table columns),
validation errors, and drain running into a budget (skipped without kubectl, failed in CI)."""

from __future__ import annotations

import textwrap

import pytest

from tests.builders import body, node, pod
from tests.simcluster.api.test_kubectl import rows

pytestmark = pytest.mark.kubectl
SMP = "application/strategic-merge-patch+json"

BUDGETS = textwrap.dedent(
    """
    apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: web, namespace: default}
    spec:
      minAvailable: 2
      selector: {matchLabels: {app: web}}
    ---
    apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: batch, namespace: default}
    spec:
      maxUnavailable: 50%
      selector:
        matchExpressions: [{key: app, operator: In, values: [batch]}]
    """
)


def running_pods(sim, *names: str, app: str = "web") -> None:
    for name in names:
        sim.core.create_namespaced_pod(
            "default",
            body(pod(name, namespace="default", labels={"app": app}, node_name="node-1")),
        )
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        sim.core.patch_namespaced_pod_status(name, "default", {"status": status}, _content_type=SMP)


def test_get_pdb_prints_kube_apiservers_columns(sim, kubectl):
    running_pods(sim, "web-0", "web-1", "web-2")
    created = kubectl("apply", "-f", "-", stdin=BUDGETS).stdout
    assert "poddisruptionbudget.policy/web created" in created
    output = kubectl("get", "pdb").stdout
    assert output.splitlines()[0].split() == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    table = rows(output)
    assert table["web"][:4] == ["web", "2", "N/A", "1"]
    assert table["batch"][:4] == ["batch", "N/A", "50%", "0"]
    everywhere = kubectl("get", "poddisruptionbudgets.policy", "-A").stdout
    assert rows(everywhere)["web"][:2] == ["default", "web"]


def test_apply_again_switches_to_max_unavailable(sim, kubectl):
    running_pods(sim, "web-0", "web-1", "web-2")
    kubectl("apply", "-f", "-", stdin=BUDGETS)
    changed = BUDGETS.replace("minAvailable: 2", "maxUnavailable: 2")
    assert (
        "poddisruptionbudget.policy/web configured"
        in kubectl("apply", "-f", "-", stdin=changed).stdout
    )
    assert rows(kubectl("get", "pdb", "web").stdout)["web"][:4] == ["web", "N/A", "2", "2"]
    generation = kubectl("get", "pdb", "web", "-o", "jsonpath={.metadata.generation}").stdout
    assert generation == "2"


def test_apply_reports_the_invalid_field(sim, kubectl):
    invalid = BUDGETS.replace("minAvailable: 2", "minAvailable: 150%")
    result = kubectl("apply", "-f", "-", stdin=invalid, check=False)
    assert result.returncode != 0
    assert (
        'The PodDisruptionBudget "web" is invalid: spec.minAvailable: Invalid value: '
        'intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%'
    ) in result.stderr
    both = BUDGETS.replace("minAvailable: 2", "minAvailable: 2\n  maxUnavailable: 1")
    result = kubectl("apply", "-f", "-", stdin=both, check=False)
    assert "minAvailable and maxUnavailable cannot be both set" in result.stderr


def test_drain_is_refused_by_the_budget(sim, kubectl):
    sim.cluster.create_object("nodes", body(node("node-1")))
    running_pods(sim, "web-0", "web-1", "web-2")
    kubectl("apply", "-f", "-", stdin=BUDGETS)
    result = kubectl("drain", "node-1", "--force", "--grace-period=0", "--timeout=2s", check=False)
    assert result.returncode != 0
    violation = (
        "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."
    )
    refused = {
        line.split('"')[1]
        for line in result.stderr.splitlines()
        if line.startswith("error when evicting pods/") and line.endswith(violation)
    }
    assert len(refused) == 2  # one pod goes, the budget holds the other two
    left = {p.metadata.name for p in sim.core.list_namespaced_pod("default").items}
    assert left == refused
