"""The real kubectl against the simulated cluster (skipped without kubectl, failed in CI)."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from tests.builders import binding, body, namespace, pod
from tests.simcluster.api.helpers import http

pytestmark = pytest.mark.kubectl
GATE = "scheduling.volcano.sh/queue-allocation-gate"

MANIFESTS = textwrap.dedent(
    """
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {name: research}
    spec: {weight: 2}
    ---
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: PodGroup
    metadata: {name: train, namespace: default}
    spec: {minMember: 1, queue: research}
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: train-0
      namespace: default
      annotations: {scheduling.k8s.io/group-name: train}
    spec:
      schedulingGates: [{name: GATE_NAME}]
      containers: [{name: main, image: busybox}]
    """
).replace("GATE_NAME", GATE)


def rows(output: str) -> dict[str, list[str]]:
    """Table rows keyed by their NAME column (the first after NAMESPACE when present)."""
    lines = output.strip().splitlines()
    header = lines[0].split()
    name_at = header.index("NAME")
    return {line.split()[name_at]: line.split() for line in lines[1:]}


def test_get_pods_wide_shows_status_node_and_nominated_node(sim, kubectl):
    sim.core.create_namespaced_pod("default", body(pod("gated", gates=(GATE,))))
    sim.core.create_namespaced_pod("default", body(pod("bound")))
    http(
        sim.server.url,
        "POST",
        "/api/v1/namespaces/default/pods/bound/binding",
        binding("bound", "node-1"),
    )
    sim.core.create_namespaced_pod("default", body(pod("nominated")))
    sim.core.patch_namespaced_pod_status(
        "nominated",
        "default",
        {"status": {"nominatedNodeName": "node-2"}},
        _content_type="application/strategic-merge-patch+json",
    )
    sim.store.mutate("pods", "default", "bound", lambda p: p["status"].update(phase="Running"))
    output = kubectl("get", "pods", "-A", "-o", "wide").stdout
    header = output.splitlines()[0]
    assert "STATUS" in header and "NODE" in header and "NOMINATED NODE" in header
    table = rows(output)
    assert table["gated"][3] == "SchedulingGated"
    assert table["bound"][3] == "Running" and table["bound"][7] == "node-1"
    assert table["nominated"][3] == "Pending" and table["nominated"][8] == "node-2"


def test_terminating_pods_show_terminating(sim, kubectl):
    sim.core.create_namespaced_pod("default", body(pod("web-1", node_name="node-1")))
    sim.core.delete_namespaced_pod("web-1", "default")
    assert rows(kubectl("get", "pods").stdout)["web-1"][2] == "Terminating"


def test_apply_creates_then_updates_pods_podgroups_and_queues(sim, kubectl):
    first = kubectl("apply", "-f", "-", stdin=MANIFESTS).stdout
    assert "queue.scheduling.volcano.sh/research created" in first
    assert "podgroup.scheduling.volcano.sh/train created" in first
    assert "pod/train-0 created" in first
    changed = MANIFESTS.replace("weight: 2", "weight: 7").replace("minMember: 1", "minMember: 3")
    second = kubectl(
        "apply", "-f", "-", stdin=changed.replace("image: busybox}", "image: busybox:1.36}")
    ).stdout
    assert "queue.scheduling.volcano.sh/research configured" in second
    assert sim.store.get("queues", "", "research")["spec"]["weight"] == 7
    assert sim.store.get("podgroups", "default", "train")["spec"]["minMember"] == 3
    applied = sim.store.get("pods", "default", "train-0")["spec"]
    assert applied["containers"][0]["image"] == "busybox:1.36"
    assert applied["schedulingGates"] == [{"name": GATE}]
    assert (
        "unchanged"
        in kubectl(
            "apply", "-f", "-", stdin=MANIFESTS.replace("weight: 2", "weight: 7")
        ).stdout.split("\n")[0]
    )


def test_get_queues_by_full_resource_name(sim, kubectl):
    kubectl("apply", "-f", "-", stdin=MANIFESTS)
    table = rows(kubectl("get", "queues.scheduling.volcano.sh").stdout)
    assert table["research"][1] == "Open"
    assert "train" in rows(kubectl("get", "podgroups", "-n", "default").stdout)


def test_label_namespace(sim, kubectl):
    kubectl("label", "namespace", "default", f"{GATE}=true")
    assert sim.store.get("namespaces", "", "default")["metadata"]["labels"] == {GATE: "true"}


def test_delete_pod(sim, kubectl):
    sim.core.create_namespaced_pod("default", body(pod("web-1")))
    assert 'pod "web-1" deleted' in kubectl("delete", "pod", "web-1").stdout
    assert sim.store.list("pods")[0] == []


def test_describe_pod_shows_conditions_and_events(sim, kubectl):
    created = sim.core.create_namespaced_pod("default", body(pod("web-1", gates=(GATE,))))
    event = {
        "metadata": {"name": "web-1.17a"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web-1",
            "uid": created.metadata.uid,
        },
        "reason": "QueueFull",
        "message": "queue research has no room",
        "type": "Normal",
        "source": {"component": "volcano"},
        "count": 1,
        "firstTimestamp": created.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTimestamp": created.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    sim.core.create_namespaced_event("default", event)
    output = kubectl("describe", "pod", "web-1").stdout
    assert "PodScheduled" in output and "Status:" in output and "Pending" in output
    assert "QueueFull" in output and "queue research has no room" in output


def test_errors_reach_kubectl_as_statuses(sim, kubectl):
    result = kubectl("get", "pod", "missing", check=False)
    assert result.returncode != 0
    assert 'pods "missing" not found' in result.stderr


def test_delete_of_a_bound_pod_waits_for_the_simulated_kubelet(tmp_path, kubectl_binary):
    from scheduler.clock import WallClock
    from simcluster.api import ApiServer, Cluster
    from simcluster.runtime import Simulation
    from simcluster.store import Store

    clock = WallClock(speed=60)
    store = Store(clock.now)
    cluster = Cluster(store, clock.now)
    cluster.create_object("namespaces", body(namespace("default")))
    cluster.create_object("pods", body(pod("web-1", node_name="node-1")))
    simulation = Simulation(
        store, clock, create_pod=lambda p: cluster.create_object("pods", p), tick=0.05
    )
    with ApiServer(cluster) as server:
        simulation.start()
        try:
            config = server.write_kubeconfig(tmp_path / "kubeconfig")
            result = subprocess.run(
                [
                    kubectl_binary,
                    "--kubeconfig",
                    str(config),
                    "delete",
                    "pod",
                    "web-1",
                    "--timeout=20s",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
        finally:
            simulation.stop()
    assert result.returncode == 0, result.stderr
    assert store.list("pods")[0] == []
