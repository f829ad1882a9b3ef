"""Leader election against the simulated cluster's Lease API (client-go's semantics): acquire,
renew, lose on a conflict, take over an expired Lease, release on a clean stop, and fencing:
a process that lost its Lease writes nothing."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import urllib3
from kubernetes import client

from scheduler.kube.fencing import NotLeader, fenced_api_client
from scheduler.kube.leader import ElectionConfig, LeaderElector
from tests.builders import body, pod
from tests.conftest import wait_until
from tests.scheduler.conftest import Sim

CONFIG = ElectionConfig(
    namespace="default", name="volcano", lease_duration=15, renew_deadline=10, retry_period=2
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(sim: Sim, identity: str, clock: Clock, **kwargs) -> LeaderElector:
    return LeaderElector(sim.api_client, CONFIG, identity, clock=clock, **kwargs)


def read_lease(sim: Sim) -> client.V1Lease:
    return client.CoordinationV1Api(sim.api_client).read_namespaced_lease("volcano", "default")


def test_the_first_candidate_creates_the_lease_and_renews_it(sim: Sim) -> None:
    clock = Clock()
    started: list[str] = []
    a = elector(sim, "a", clock, on_started_leading=lambda: started.append("a"))
    assert a.try_acquire_or_renew()
    assert a.is_leader() and started == ["a"]
    lease = read_lease(sim)
    assert lease.spec.holder_identity == "a"
    assert lease.spec.lease_duration_seconds == 15
    assert lease.spec.lease_transitions == 0
    acquired, renewed = lease.spec.acquire_time, lease.spec.renew_time

    clock.now += 2
    assert a.try_acquire_or_renew()
    lease = read_lease(sim)
    assert lease.spec.acquire_time == acquired  # a renewal keeps acquireTime
    assert lease.spec.renew_time > renewed
    assert lease.spec.lease_transitions == 0
    assert started == ["a"]  # renewing is not starting again


def test_a_standby_waits_while_the_lease_is_held_and_takes_over_once_it_expires(sim: Sim) -> None:
    clock_a, clock_b = Clock(), Clock()
    stopped: list[str] = []
    a = elector(sim, "a", clock_a, on_stopped_leading=lambda: stopped.append("a"))
    b = elector(sim, "b", clock_b)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert b.holder == "a" and not b.is_leader()

    clock_b.now += 14.9  # not yet expired on b's clock (observed at its first read)
    assert not b.try_acquire_or_renew()
    # a is paused: its renewal does not come. Its own clock fences it first.
    clock_a.now += 10
    assert not a.is_leader()
    clock_b.now += 0.2
    assert b.try_acquire_or_renew()
    lease = read_lease(sim)
    assert lease.spec.holder_identity == "b"
    assert lease.spec.lease_transitions == 1
    assert lease.spec.acquire_time == lease.spec.renew_time

    # a runs again: it reads b's record, which is fresh on its clock: a is a standby now.
    assert not a.try_acquire_or_renew()
    assert stopped == ["a"] and not a.is_leader() and a.holder == "b"


def test_a_deleted_lease_is_recreated_by_a_standby_only_once_the_last_record_expired(
    sim: Sim,
) -> None:
    """client-go's observedTime: a standby that saw a's record treats it as held for
    leaseDurationSeconds from that observation, Lease or no Lease; a's fence ends sooner."""
    clock = Clock()
    a, b = elector(sim, "a", clock), elector(sim, "b", clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()  # b observes at 1000
    client.CoordinationV1Api(sim.api_client).delete_namespaced_lease("volcano", "default")
    clock.now += 14
    assert not b.try_acquire_or_renew()  # no Lease, yet a's record has 1 s to run
    assert not b.is_leader()
    with pytest.raises(client.ApiException) as gone:
        read_lease(sim)
    assert gone.value.status == 404  # b created nothing
    clock.now += 1
    assert not a.is_leader()  # its fence (renew deadline) ended first
    assert b.try_acquire_or_renew() and b.is_leader()
    assert read_lease(sim).spec.holder_identity == "b"
    assert not a.try_acquire_or_renew()  # a finds b's record and stands by


def test_a_leader_whose_lease_was_deleted_creates_it_again_and_keeps_leading(sim: Sim) -> None:
    clock = Clock()
    a, b = elector(sim, "a", clock), elector(sim, "b", clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    client.CoordinationV1Api(sim.api_client).delete_namespaced_lease("volcano", "default")
    clock.now += 2
    assert a.try_acquire_or_renew() and a.is_leader()  # its own record: no one else may lead
    assert read_lease(sim).spec.holder_identity == "a"
    clock.now += 14
    assert not b.try_acquire_or_renew()  # b saw the new record at 1016: held until 1031


def test_a_renewal_that_meets_a_conflict_loses(sim: Sim) -> None:
    """Two candidates read the same expired Lease; the one whose update comes second carries
    a stale resourceVersion and gets 409: exactly one holds it."""
    clock_a, clock_b = Clock(), Clock()
    seed = elector(sim, "gone", Clock())
    assert seed.try_acquire_or_renew()  # a holder that then dies
    a, b = elector(sim, "a", clock_a), elector(sim, "b", clock_b)
    assert not a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    clock_a.now += 16
    clock_b.now += 16
    read = a.api.read_namespaced_lease

    def read_then_rival_writes(*args, **kwargs):
        answer = read(*args, **kwargs)
        assert b.try_acquire_or_renew()  # b writes between a's read and a's update
        return answer

    a.api.read_namespaced_lease = read_then_rival_writes  # type: ignore[method-assign]
    assert not a.try_acquire_or_renew()
    assert not a.is_leader() and b.is_leader()
    assert read_lease(sim).spec.holder_identity == "b"


def test_a_clean_stop_releases_the_lease_and_a_standby_takes_it_at_once(sim: Sim) -> None:
    config = ElectionConfig(
        namespace="default", name="volcano", lease_duration=15, renew_deadline=1, retry_period=0.2
    )
    a = LeaderElector(sim.api_client, config, "a").start()
    wait_until(a.is_leader, timeout=5)
    b = LeaderElector(sim.api_client, config, "b").start()
    try:
        wait_until(lambda: b.holder == "a", timeout=5)
        assert not b.is_leader()
        a.stop()
        assert not a.is_leader()
        lease = read_lease(sim)
        assert lease.spec.holder_identity in ("", "b")
        # far sooner than the 15 s lease: the release said so
        wait_until(b.is_leader, timeout=3)
        # client-go: a release keeps the count; the holder changing from a ("") to b adds one
        assert read_lease(sim).spec.lease_transitions == 1
    finally:
        b.stop()


def test_a_leader_that_cannot_renew_within_the_deadline_stops_leading(sim: Sim) -> None:
    config = ElectionConfig(
        namespace="default", name="volcano", lease_duration=3, renew_deadline=1, retry_period=0.2
    )
    stopped: list[bool] = []
    a = LeaderElector(sim.api_client, config, "a", on_stopped_leading=lambda: stopped.append(True))
    a.start()
    try:
        wait_until(a.is_leader, timeout=5)
        # A rival takes the Lease over by force (as after a partition): a's renewals conflict.
        lease = read_lease(sim)
        lease.spec.holder_identity = "rival"
        client.CoordinationV1Api(sim.api_client).replace_namespaced_lease(
            "volcano", "default", lease
        )
        wait_until(lambda: stopped == [True], timeout=5)
        assert not a.is_leader()
    finally:
        a.stop()
    assert read_lease(sim).spec.holder_identity == "rival"  # not released: it was not a's


def test_a_fenced_client_writes_only_while_its_process_leads(sim: Sim) -> None:
    clock = Clock()
    a = elector(sim, "a", clock)
    fenced, refused = fenced_api_client(sim.api_client, a.is_leader)
    core = client.CoreV1Api(fenced)
    with pytest.raises(NotLeader):
        core.create_namespaced_pod("default", body(pod("p0")))
    assert a.try_acquire_or_renew()
    core.create_namespaced_pod("default", body(pod("p1")))
    assert core.read_namespaced_pod("p1", "default").metadata.name == "p1"  # reads pass
    clock.now += 10  # renew_deadline without a renewal: fenced, before anyone may take over
    with pytest.raises(NotLeader):
        core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "y"}}})
    assert core.read_namespaced_pod("p1", "default").metadata.labels in (None, {})
    names = [p.metadata.name for p in sim.core.list_namespaced_pod("default").items]
    assert names == ["p1"] and refused == [2]


def test_election_timings_are_checked_as_component_base_does() -> None:
    with pytest.raises(ValueError, match="greater than renew deadline"):
        ElectionConfig(lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="retry period"):
        ElectionConfig(renew_deadline=2, retry_period=2)
    assert ElectionConfig().lease_duration == 15  # Volcano's defaults
    assert (ElectionConfig().renew_deadline, ElectionConfig().retry_period) == (10, 2)


def test_a_lease_request_the_api_server_never_answers_gives_up_after_the_renew_deadline() -> None:
    """client-go bounds each renewal by the renew deadline; a request without a timeout to an
    API server that accepts and never answers would hold the election thread for ever."""
    config = ElectionConfig(
        namespace="default", name="volcano", lease_duration=3, renew_deadline=1, retry_period=0.2
    )
    with socket.socket() as listener:  # accepts connections (the backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        host = f"http://127.0.0.1:{listener.getsockname()[1]}"
        api = client.ApiClient(client.Configuration(host=host))
        candidate = LeaderElector(api, config, "a")
        outcome: list[object] = []

        def attempt() -> None:
            started = time.monotonic()
            try:
                candidate.try_acquire_or_renew()
            except Exception as exc:  # the timeout, as the election thread's _attempt sees it
                outcome.append(exc)
            outcome.append(time.monotonic() - started)

        thread = threading.Thread(target=attempt, daemon=True)
        thread.start()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the request to a silent API server never gave up"
        error, took = outcome
        assert isinstance(error, urllib3.exceptions.ReadTimeoutError), error
        assert took < config.renew_deadline + 1, took
        assert not candidate.is_leader()
        assert candidate.release() is False  # not leading: nothing to send
