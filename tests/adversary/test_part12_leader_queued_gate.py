"""A gate removal the leader queued through Redis, run by a ``gates`` worker after that leader
lost its Lease."""

from __future__ import annotations

from kubernetes import client

from dashboard.tasks import gates as gate_tasks
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.kube.leader import ElectionConfig, LeaderElector
from tests.adversary.helpers import make_node

CONFIG = ElectionConfig(
    namespace="default", name="volcano", lease_duration=15, renew_deadline=10, retry_period=2
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_gate_removal_queued_by_a_deposed_leader_is_not_written(sim, monkeypatch):
    """dashboard/tasks/scheduling.py: "A leader paused (SIGSTOP, a frozen VM) or cut off writes
    nothing more, before a standby may take the Lease; a gate removal is not even queued."
    A removal queued *while* it led is still that leader's write, yet the ``remove_gate``
    task runs it through an unfenced client (``KubeClusterClient(kube.api_client())``) with no
    check of the Lease — after autoretries (429/5xx: up to 5, countdown up to 10 s) or an
    ``acks_late`` redelivery (a worker killed: the broker's visibility timeout) it lands long
    after the Lease passed to another leader, which did not count that reservation when it
    shared the queue's room out."""
    monkeypatch.setattr(gate_tasks.kube, "api_client", lambda: sim.api_client)
    clock = Clock()
    a = LeaderElector(sim.api_client, CONFIG, "a", clock=clock)
    b = LeaderElector(sim.api_client, CONFIG, "b", clock=clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    make_node(sim, "n1")
    sim.core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "p"},
            "spec": {
                "schedulingGates": [{"name": QUEUE_ALLOCATION_GATE}],
                "containers": [{"name": "c", "image": "busybox"}],
            },
        },
    )
    uid = sim.store.get("pods", "default", "p")["metadata"]["uid"]
    # a decided to ungate p and queued the removal; then a was cut off and b took over.
    queued = ("default", "p", uid, "2026-11-24T00:00:00.000000Z", a.term())
    clock.now += 16
    assert b.try_acquire_or_renew() and not a.is_leader()
    lease = client.CoordinationV1Api(sim.api_client).read_namespaced_lease("volcano", "default")
    assert lease.spec is not None and lease.spec.holder_identity == "b"
    gate_tasks.remove_gate.apply(args=queued)  # a gates worker runs the queued task now
    gates = sim.store.get("pods", "default", "p")["spec"].get("schedulingGates") or []
    assert [g["name"] for g in gates] == [QUEUE_ALLOCATION_GATE], "a deposed leader's write landed"
