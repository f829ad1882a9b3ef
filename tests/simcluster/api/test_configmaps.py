"""ConfigMaps in the simulated cluster: where a scheduler configuration lives in Volcano's Helm
chart (volcano-scheduler-configmap, key volcano-scheduler.conf), read by the real kubectl and
by Sluice's ConfigMapText."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from scheduler.kube.configmap import ConfigMapText
from tests.simcluster.api.conftest import Sim
from tests.simcluster.api.helpers import http

CONF = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"


def config_map(name: str, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_config_map_text_reads_the_key_and_only_hands_out_changes(sim: Sim) -> None:
    sim.core.create_namespaced_config_map(
        "default", config_map("volcano-scheduler-configmap", {"volcano-scheduler.conf": CONF})
    )
    now = [0.0]
    text = ConfigMapText(
        sim.api_client, "default", "volcano-scheduler-configmap", period=10, clock=lambda: now[0]
    )
    assert text.changed() == CONF
    assert text.changed() is None  # not due
    now[0] = 11
    assert text.changed() is None  # due but unchanged
    changed = CONF.replace("enqueue, allocate", "enqueue, allocate, backfill")
    sim.core.patch_namespaced_config_map(
        "volcano-scheduler-configmap", "default", {"data": {"volcano-scheduler.conf": changed}}
    )
    now[0] = 22
    assert text.changed() == changed


def test_config_map_text_names_the_missing_object_and_key(sim: Sim) -> None:
    missing = ConfigMapText(sim.api_client, "default", "absent")
    with pytest.raises(OSError, match="HTTP 404"):
        missing.changed()
    sim.core.create_namespaced_config_map("default", config_map("other", {"conf": CONF}))
    with pytest.raises(OSError, match="has no key 'volcano-scheduler.conf'"):
        ConfigMapText(sim.api_client, "default", "other").changed()


def test_config_map_keys_and_values_are_validated_like_kube_apiserver(sim: Sim) -> None:
    with pytest.raises(ApiException) as bad_key:
        sim.core.create_namespaced_config_map("default", config_map("bad", {"a b": "x"}))
    assert bad_key.value.status == 422
    assert "data[a b]" in bad_key.value.body and "valid config key" in bad_key.value.body
    # The typed client refuses a non-string value itself; a raw request reaches the server.
    status, answer = http(
        sim.server.url, "POST", "/api/v1/namespaces/default/configmaps", config_map("bad", {"n": 3})
    )
    assert status == 422 and "must be a string" in answer["message"]
    sim.core.create_namespaced_config_map("default", config_map("good", {"k": "v"}))
    with pytest.raises(ApiException) as bad_update:
        sim.core.patch_namespaced_config_map("good", "default", {"data": {"k/": "v"}})
    assert bad_update.value.status == 422
    assert sim.core.read_namespaced_config_map("good", "default").data == {"k": "v"}


@pytest.mark.kubectl
def test_kubectl_creates_and_lists_config_maps(sim: Sim, kubectl, tmp_path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    # kubectl create sends built-in kinds as protobuf, which the simulated cluster does not
    # speak (it answers 415 as kube-apiserver does for an unknown format); apply sends JSON.
    rendered = kubectl(
        "create",
        "configmap",
        "volcano-scheduler-configmap",
        f"--from-file={conf}",
        "--dry-run=client",
        "-o",
        "yaml",
    ).stdout
    kubectl("apply", "-f", "-", stdin=rendered)
    listed = kubectl("get", "configmaps").stdout.splitlines()
    assert listed[0].split() == ["NAME", "DATA", "AGE"]
    assert listed[1].split()[:2] == ["volcano-scheduler-configmap", "1"]
    shown = kubectl(
        "get",
        "cm",
        "volcano-scheduler-configmap",
        "-o",
        "jsonpath={.data.volcano-scheduler\\.conf}",
    ).stdout
    assert shown == CONF


@pytest.mark.kubectl
def test_kubectl_lists_priority_classes(sim: Sim, kubectl) -> None:
    listed = kubectl("get", "priorityclasses").stdout.splitlines()
    assert listed[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    names = {line.split()[0] for line in listed[1:]}
    assert {"system-cluster-critical", "system-node-critical"} <= names
