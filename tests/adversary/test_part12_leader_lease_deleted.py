"""Leader election when the Lease is deleted while held."""

from __future__ import annotations

from kubernetes import client

from scheduler.kube.leader import ElectionConfig, LeaderElector

CONFIG = ElectionConfig(
    namespace="default", name="volcano", lease_duration=15, renew_deadline=10, retry_period=2
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_deleted_lease_never_gives_two_leaders_at_once(sim):
    """README "Leader election" / issue C: "only the leader … schedules"; "a leader that loses
    its lease writes nothing more"; leader.py: "exactly one — the holder of the Lease — keeps a
    warm cache and schedules". Delete the Lease while ``a`` holds it: the standby ``b`` reads
    404, creates a fresh Lease and leads at once, while ``a``'s fence (``is_leader``: renewed
    less than renew_deadline ago) still lets every write of ``a`` through — two leaders
    writing, for up to a retry period (longer if a's next renewal is slow or refused). The
    fence judges time only, never whether the Lease still names this process; client-go's
    LeaseLock has the same window, but Sluice's fence promises more."""
    clock = Clock()
    a = LeaderElector(sim.api_client, CONFIG, "a", clock=clock)
    b = LeaderElector(sim.api_client, CONFIG, "b", clock=clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    client.CoordinationV1Api(sim.api_client).delete_namespaced_lease("volcano", "default")
    clock.now += 1
    took_over = b.try_acquire_or_renew()
    assert not (took_over and a.is_leader()), "a and b both lead"
