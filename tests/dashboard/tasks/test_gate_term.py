"""Leader election and the ``gates`` queue: a gate removal carries the term of the leader that
queued it (its Lease, holder identity, leaseTransitions) and the task writes only while the
Lease still names that holder in that transition — else it is dropped and counted ``deposed``.
Without leader election (no term) the task writes as before."""

from __future__ import annotations

import pytest
import redis
from kubernetes import client

from dashboard import kube
from dashboard.services import gate_stats
from dashboard.tasks import gates, sending
from scheduler.kube.leader import ElectionConfig, LeaderElector
from tests.builders import GATE, body, pod
from tests.dashboard.tasks.test_scheduling import point_at
from tests.dashboard.test_broker_down import broker_down  # noqa: F401 - fixture
from tests.scheduler.conftest import sim  # noqa: F401 - fixture

CONFIG = ElectionConfig(
    namespace="default", name="volcano", lease_duration=15, renew_deadline=10, retry_period=2
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cluster(settings, sim, tmp_path, redis_url):  # noqa: F811
    settings.CELERY_BROKER_URL = redis_url  # the gate counters
    redis.Redis.from_url(redis_url).delete(gate_stats.KEY)
    point_at(settings, sim, tmp_path)
    yield sim
    kube.api_client.cache_clear()


@pytest.fixture
def sent(monkeypatch):
    """What queue_gate_removal hands the broker (the message's args), in order."""
    messages: list[tuple] = []

    def send(task, args, **options):
        assert task is gates.remove_gate and options == {"queue": "gates"}
        messages.append(args)
        return True

    monkeypatch.setattr(sending, "send", send)
    return messages


def gated(running, name: str) -> str:
    created = running.core.create_namespaced_pod(
        "default", body(pod(name, namespace="default", gates=[GATE], opt_in=True))
    )
    return created.metadata.uid


def gates_of(running, name: str) -> list[str]:
    spec = running.core.read_namespaced_pod(name, "default").spec
    return [g.name for g in spec.scheduling_gates or []]


def test_a_removal_runs_while_its_leader_holds_the_lease_and_is_dropped_once_it_does_not(
    cluster, sent
):
    clock = Clock()
    a = LeaderElector(cluster.api_client, CONFIG, "a", clock=clock)
    b = LeaderElector(cluster.api_client, CONFIG, "b", clock=clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    first, second = gated(cluster, "first"), gated(cluster, "second")
    gates.queue_gate_removal("default", "first", first, term=a.term)
    gates.queue_gate_removal("default", "second", second, term=a.term)
    assert [m[4] for m in sent] == [
        {"namespace": "default", "name": "volcano", "holder": "a", "transitions": 0}
    ] * 2

    assert gates.remove_gate.apply(args=sent[0]).get() == "removed"  # a still holds it
    assert gates_of(cluster, "first") == []

    clock.now += 16
    assert b.try_acquire_or_renew()  # a's lease expired: b leads (transition 1)
    assert gates.remove_gate.apply(args=sent[1]).get() == "deposed"
    assert gates_of(cluster, "second") == [GATE]
    counts = gate_stats.read()
    assert counts["removed"] == 1 and counts["deposed"] == 1

    # Not leading, a queues nothing at all.
    clock.now += 1
    gates.queue_gate_removal("default", "second", second, term=a.term)
    assert len(sent) == 2


def test_the_same_holder_in_a_later_term_is_not_the_queuing_leader(cluster, sent):
    """a lost the Lease and won it back: its earlier term's removal is still dropped."""
    clock = Clock()
    a = LeaderElector(cluster.api_client, CONFIG, "a", clock=clock)
    b = LeaderElector(cluster.api_client, CONFIG, "b", clock=clock)
    assert a.try_acquire_or_renew()
    uid = gated(cluster, "p")
    gates.queue_gate_removal("default", "p", uid, term=a.term)
    assert b.try_acquire_or_renew() is False
    clock.now += 16
    assert b.try_acquire_or_renew()
    assert b.release()
    assert a.try_acquire_or_renew() and a.is_leader()
    assert a.term()["transitions"] == 2  # a -> b -> a
    assert gates.remove_gate.apply(args=sent[0]).get() == "deposed"
    assert gates_of(cluster, "p") == [GATE]


def test_a_removal_whose_lease_was_deleted_is_dropped(cluster, sent):
    clock = Clock()
    a = LeaderElector(cluster.api_client, CONFIG, "a", clock=clock)
    assert a.try_acquire_or_renew()
    uid = gated(cluster, "p")
    gates.queue_gate_removal("default", "p", uid, term=a.term)
    client.CoordinationV1Api(cluster.api_client).delete_namespaced_lease("volcano", "default")
    assert gates.remove_gate.apply(args=sent[0]).get() == "deposed"
    assert gates_of(cluster, "p") == [GATE]


def test_without_leader_election_a_removal_carries_no_term_and_is_written(cluster, sent):
    uid = gated(cluster, "p")
    gates.queue_gate_removal("default", "p", uid)
    assert sent[0][4] is None
    assert gates.remove_gate.apply(args=sent[0]).get() == "removed"
    assert gates_of(cluster, "p") == []


def test_the_fallback_pool_writes_nothing_once_its_leader_lost_the_lease(
    settings,
    sim,  # noqa: F811
    tmp_path,
    broker_down,  # noqa: F811
):
    """Redis refusing, the leader's own pool removes the gate — fenced by the same term."""
    point_at(settings, sim, tmp_path)
    try:
        clock = Clock()
        a = LeaderElector(sim.api_client, CONFIG, "a", clock=clock)
        b = LeaderElector(sim.api_client, CONFIG, "b", clock=clock)
        assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
        first, second = gated(sim, "first"), gated(sim, "second")
        gates.queue_gate_removal("default", "first", first, term=a.term)
        assert gates._pool is not None and gates._pool[1].wait_idle(10)
        assert gates_of(sim, "first") == []

        # Queued while a leads; a has lost the Lease by the time the pool's write leaves.
        answers = iter([a.term()])
        gates.queue_gate_removal("default", "second", second, term=lambda: next(answers, None))
        pool = gates._pool[1]
        assert pool.wait_idle(10)
        assert pool.outcomes["not_leader"] == 1
        assert gates_of(sim, "second") == [GATE]
    finally:
        kube.api_client.cache_clear()
