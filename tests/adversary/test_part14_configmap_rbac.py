"""Adversary, Part 14: the scheduler configuration ConfigMap under the overlays' ClusterRoles.

``SLUICE_SCHEDULER_CONFIGMAP`` (README: Configuration) makes the scheduler worker read its
configuration from a ConfigMap ``namespace/name`` under ``volcano-scheduler.conf`` — on a
cluster that replaces vc-scheduler, Volcano's own ``volcano-system/volcano-scheduler-configmap``.
The worker reads it through ``dashboard.tasks.admission.scheduler_config_source`` with the
pod's service account; the simulated API server records each request's RBAC attributes.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from dashboard.tasks.admission import scheduler_config_source
from scheduler.config import DEFAULT_CONFIG_YAML as DEFAULT_CONF
from simcluster.api.audit import RequestAttributes
from tests.builders import body, namespace
from tests.deploy.manifests import render
from tests.deploy.rbac import account_grants, denied


@pytest.mark.parametrize("overlay", ["observe", "act"])
def test_the_scheduler_may_read_the_configuration_configmap_it_is_pointed_at(sim, overlay):
    """Promise (issue 19): "The ClusterRole lists exactly the verbs and resources Sluice uses";
    README Configuration offers SLUICE_SCHEDULER_CONFIGMAP for the scheduler's configuration,
    and "Run it on your cluster" says nothing of granting more for it.

    The worker's one request for it, ``get configmaps`` in volcano-system, is refused by both
    overlays: neither ClusterRole (nor any Role bound to the account sluice) grants configmaps
    at all, so a scheduler pointed at Volcano's ConfigMap logs HTTP 403 every period and never
    loads the configuration. Fault: deploy/overlays/{observe,act}/clusterrole.yaml (no
    configmaps get), and tests/deploy/test_least_privilege.py, which never sets the setting."""
    requests: list[RequestAttributes] = []
    sim.server.recorder = requests.append
    sim.cluster.create_object("namespaces", body(namespace("volcano-system")))
    sim.cluster.create_object(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": DEFAULT_CONF},
        },
        "volcano-system",
    )
    with override_settings(
        SLUICE_SCHEDULER_CONF="",
        SLUICE_SCHEDULER_CONFIGMAP="volcano-system/volcano-scheduler-configmap",
    ):
        source = scheduler_config_source(sim.api_client)
    assert source is not None
    assert source.changed() == DEFAULT_CONF  # the scheduler's read, as the worker makes it
    reads = [r for r in requests if r.resource == "configmaps"]
    assert [(r.verb, r.namespace, r.name) for r in reads] == [
        ("get", "volcano-system", "volcano-scheduler-configmap")
    ]
    refused = denied(reads, account_grants(render(overlay), "sluice", "sluice"))
    assert not refused, f"the {overlay} overlay refuses the scheduler's read: {refused}"
