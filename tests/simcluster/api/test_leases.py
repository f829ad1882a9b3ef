"""Leases (coordination.k8s.io/v1) in the simulated cluster: what leader election reads and
writes, with kube-apiserver's optimistic concurrency and validation."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.simcluster.api.conftest import Sim
from tests.simcluster.api.helpers import http


def lease(name: str, holder: str = "a", **spec) -> dict:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, **spec},
    }


def test_leases_are_created_read_listed_and_updated_with_resource_version_conflicts(
    sim: Sim,
) -> None:
    api = client.CoordinationV1Api(sim.api_client)
    created = api.create_namespaced_lease(
        "default", lease("volcano", renewTime="2026-01-01T00:00:00.000000Z")
    )
    assert created.spec.holder_identity == "a"
    assert created.spec.renew_time is not None  # MicroTime decoded by the client
    with pytest.raises(ApiException) as exists:
        api.create_namespaced_lease("default", lease("volcano"))
    assert exists.value.status == 409

    current = api.read_namespaced_lease("volcano", "default")
    stale = current.metadata.resource_version
    current.spec.holder_identity = "b"
    updated = api.replace_namespaced_lease("volcano", "default", current)
    assert updated.spec.holder_identity == "b"
    assert updated.metadata.resource_version != stale

    current.metadata.resource_version = stale  # a rival that read before the update
    current.spec.holder_identity = "c"
    with pytest.raises(ApiException) as conflict:
        api.replace_namespaced_lease("volcano", "default", current)
    assert conflict.value.status == 409
    assert api.read_namespaced_lease("volcano", "default").spec.holder_identity == "b"

    listed = api.list_namespaced_lease("default").items
    assert [item.metadata.name for item in listed] == ["volcano"]
    assert [i.metadata.name for i in api.list_lease_for_all_namespaces().items] == ["volcano"]


def test_lease_changes_are_watched(sim: Sim) -> None:
    api = client.CoordinationV1Api(sim.api_client)
    seen: list[tuple[str, str]] = []
    start = api.list_namespaced_lease("default").metadata.resource_version

    def follow() -> None:
        w = watch.Watch()
        for event in w.stream(
            api.list_namespaced_lease, "default", resource_version=start, timeout_seconds=5
        ):
            seen.append((event["type"], event["object"].spec.holder_identity))
            if len(seen) == 2:
                w.stop()

    thread = threading.Thread(target=follow)
    thread.start()
    api.create_namespaced_lease("default", lease("volcano"))
    api.patch_namespaced_lease("volcano", "default", {"spec": {"holderIdentity": "b"}})
    thread.join(timeout=10)
    assert seen == [("ADDED", "a"), ("MODIFIED", "b")]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"leaseDurationSeconds": 0}, "spec.leaseDurationSeconds"),
        ({"leaseDurationSeconds": -5}, "spec.leaseDurationSeconds"),
        ({"leaseTransitions": -1}, "spec.leaseTransitions"),
    ],
)
def test_invalid_leases_are_refused_naming_the_field(sim: Sim, spec: dict, field: str) -> None:
    api = client.CoordinationV1Api(sim.api_client)
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_lease("default", lease("volcano", **spec))
    assert refused.value.status == 422
    assert field in refused.value.body
    api.create_namespaced_lease("default", lease("volcano"))
    with pytest.raises(ApiException) as on_update:
        api.patch_namespaced_lease("volcano", "default", {"spec": spec})
    assert on_update.value.status == 422


def test_a_lease_whose_fields_do_not_decode_is_a_bad_request(sim: Sim) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    for spec in ({"leaseDurationSeconds": "15"}, {"renewTime": "yesterday"}, {"holderIdentity": 3}):
        body = lease("volcano")
        body["spec"].update(spec)
        status, answer = http(sim.server.url, "POST", path, body)
        assert status == 400, (spec, answer)
        assert f"spec.{next(iter(spec))}" in answer["message"]
    assert http(sim.server.url, "GET", path)[1]["items"] == []


def test_kubectl_lists_leases_with_their_holder(sim: Sim, kubectl) -> None:
    client.CoordinationV1Api(sim.api_client).create_namespaced_lease(
        "default", lease("volcano", holder="scheduler-1_abc")
    )
    out = kubectl("get", "leases", "-n", "default").stdout
    assert out.split("\n")[0].split() == ["NAME", "HOLDER", "AGE"]
    assert out.split("\n")[1].split()[:2] == ["volcano", "scheduler-1_abc"]
    shown = kubectl(
        "get", "lease", "volcano", "-n", "default", "-o", "jsonpath={.spec.holderIdentity}"
    )
    assert shown.stdout == "scheduler-1_abc"
