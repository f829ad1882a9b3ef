"""The simulated cluster has a `kube-system` namespace, as kube-apiserver creates one when it
starts: its UID is the cluster's identity in the scheduler's reports, so a cluster started
afresh is another cluster (and the dashboard does not mix their pods)."""

from __future__ import annotations

from kubernetes import client

from simcluster.api.app import SimClusterOptions, build


def kube_system_uid(options: SimClusterOptions) -> str:
    sim = build(options)
    sim.server.start()
    try:
        with client.ApiClient(client.Configuration(host=sim.server.url)) as api:
            return client.CoreV1Api(api).read_namespace("kube-system").metadata.uid
    finally:
        sim.server.stop()


def test_every_simulated_cluster_has_kube_system_and_a_fresh_one_is_another_cluster():
    options = SimClusterOptions(scenario="empty")

    first, second = kube_system_uid(options), kube_system_uid(options)

    assert first and second and first != second
