"""Part 12 attacks that held: the simulated cluster's optimistic concurrency and immutability
answers, ``--faults`` range checks, and leader election facing a Lease edited by hand."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.kube.leader import ElectionConfig, LeaderElector
from tests.adversary.helpers import make_node, make_pod

CONFIG = ElectionConfig(
    namespace="default", name="volcano", lease_duration=15, renew_deadline=10, retry_period=2
)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def refused(call) -> ApiException:
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value


def leases(sim) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(sim.api_client)


def bind(sim, pod: str, node: str):
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod),
        target=client.V1ObjectReference(kind="Node", name=node),
    )
    return sim.core.create_namespaced_pod_binding(pod, "default", binding, _preload_content=False)


def test_a_stale_resource_version_is_a_conflict_on_leases_and_pods(sim):
    """kube-apiserver's optimistic concurrency: an update carrying an old resourceVersion is
    409, whatever the kind."""
    api = leases(sim)
    api.create_namespaced_lease(
        "default", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    )
    stale = {"metadata": {"name": "l", "resourceVersion": "1"}, "spec": {"holderIdentity": "b"}}
    assert refused(lambda: api.replace_namespaced_lease("l", "default", stale)).status == 409
    patch = {"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "b"}}
    assert refused(lambda: api.patch_namespaced_lease("l", "default", patch)).status == 409
    assert api.read_namespaced_lease("l", "default").spec.holder_identity == "a"


def test_a_lease_duration_of_zero_and_a_bad_renew_time_are_refused(sim):
    api = leases(sim)
    api.create_namespaced_lease(
        "default", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    )
    error = refused(
        lambda: api.patch_namespaced_lease("l", "default", {"spec": {"leaseDurationSeconds": 0}})
    )
    assert error.status == 422 and "spec.leaseDurationSeconds" in error.body
    error = refused(
        lambda: api.patch_namespaced_lease("l", "default", {"spec": {"renewTime": "yesterday"}})
    )
    assert error.status == 400 and "spec.renewTime" in error.body


def test_a_patched_uid_and_a_nodename_sent_to_the_status_subresource_change_nothing(sim):
    api = leases(sim)
    api.create_namespaced_lease("default", {"metadata": {"name": "l"}, "spec": {}})
    uid = api.read_namespaced_lease("l", "default").metadata.uid
    try:
        api.patch_namespaced_lease("l", "default", {"metadata": {"uid": "forged"}})
    except ApiException as exc:
        assert exc.status == 409  # kube-apiserver: Precondition failed: UID
    assert api.read_namespaced_lease("l", "default").metadata.uid == uid
    make_node(sim, "n1")
    make_pod(sim, "p")
    sim.core.patch_namespaced_pod_status("p", "default", {"spec": {"nodeName": "n1"}})
    assert not sim.store.get("pods", "default", "p")["spec"].get("nodeName")


def test_binding_twice_rebinding_by_patch_and_evicting_a_missing_pod(sim):
    make_node(sim, "n1")
    make_node(sim, "n2")
    make_pod(sim, "p")
    bind(sim, "p", "n1")
    assert refused(lambda: bind(sim, "p", "n2")).status == 409
    assert refused(lambda: bind(sim, "p", "n1")).status == 409
    error = refused(
        lambda: sim.core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n2"}})
    )
    assert error.status == 422
    patch = [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "9"}]
    assert refused(lambda: sim.core.patch_namespaced_pod("p", "default", patch)).status == 422
    assert sim.store.get("pods", "default", "p")["spec"]["nodeName"] == "n1"
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="ghost", namespace="default"))
    error = refused(lambda: sim.core.create_namespaced_pod_eviction("ghost", "default", eviction))
    assert error.status == 404
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="wrong"))
    error = refused(lambda: sim.core.delete_namespaced_pod("p", "default", body=options))
    assert error.status == 409
    assert sim.store.get("pods", "default", "p") is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("conflict=2", "--faults.conflict"),
        ("conflict=-1", "--faults.conflict"),
        ("nope=0.1", "'nope'"),
        ("conflict", "'conflict': expected key=value"),
    ],
)
def test_a_fault_value_out_of_range_or_an_unknown_key_is_named(text, expected):
    with pytest.raises(CommandError) as caught:
        call_command("simcluster", "--port", "0", "--faults", text)
    assert expected in str(caught.value)


def test_a_holder_changed_by_hand_ends_the_leaders_leadership_at_its_next_renewal(sim):
    """client-go: a renewal that reads another holder fails; the old leader's fence closes and
    it does not take the Lease back before that holder's duration passes on its clock."""
    clock = Clock()
    a = LeaderElector(sim.api_client, CONFIG, "a", clock=clock)
    assert a.try_acquire_or_renew()
    leases(sim).patch_namespaced_lease(
        "volcano", "default", {"spec": {"holderIdentity": "intruder"}}
    )
    clock.now += 2
    assert not a.try_acquire_or_renew()
    assert not a.is_leader()
    clock.now += 14
    assert not a.try_acquire_or_renew()  # 14 s since it saw the change: not expired
    clock.now += 2
    assert a.try_acquire_or_renew()  # 16 s: expired on a's own clock


def test_a_renew_time_in_the_future_or_a_missing_acquire_time_does_not_move_expiry(sim):
    """Expiry is judged on the standby's monotonic clock from when it saw the record change,
    never from renewTime (clock skew): a renewTime a year ahead and no acquireTime change
    nothing."""
    clock = Clock()
    skewed = Clock(5_000_000.0)
    a = LeaderElector(sim.api_client, CONFIG, "a", clock=clock, wall_clock=skewed)
    b = LeaderElector(sim.api_client, CONFIG, "b", clock=clock)
    assert a.try_acquire_or_renew()
    lease = leases(sim).read_namespaced_lease("volcano", "default")
    spec = {"renewTime": "2027-11-24T00:00:00.000000Z", "acquireTime": None}
    leases(sim).patch_namespaced_lease("volcano", "default", {"spec": spec})
    assert lease.spec.holder_identity == "a"
    assert not b.try_acquire_or_renew()
    clock.now += 14
    assert not b.try_acquire_or_renew()
    clock.now += 2
    assert b.try_acquire_or_renew()
    assert leases(sim).read_namespaced_lease("volcano", "default").spec.holder_identity == "b"
