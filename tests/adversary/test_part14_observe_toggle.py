"""Adversary, Part 14: the Namespaces page's opt-in toggle in observe mode.

The web runs with the observe overlay's settings (``SLUICE_MODE=observe``) against the
simulated cluster, which records every request's RBAC attributes. An administrator (README,
observe mode step 5: ``createsuperuser`` "for the pages that change something") opens the
Namespaces page and uses the toggle it offers.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from dashboard import kube
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from simcluster.api.audit import RequestAttributes
from tests.builders import body, namespace
from tests.deploy.manifests import find, render
from tests.deploy.rbac import WRITE_VERBS, account_grants, denied


@pytest.mark.django_db
def test_observe_mode_web_makes_no_request_the_observe_overlay_refuses(sim, admin_client, tmp_path):
    """Promise (issue 19): "the observe overlay's role has no write verb" and the least-privilege
    test shows the observe overlay allows every request observe mode makes (README: "played in
    observe mode, the observe overlay allows all of it"); observe mode "writes nothing".

    In observe mode the Namespaces page still offers the toggle and its POST sends
    ``PATCH /api/v1/namespaces/team`` — a write the observe ClusterRole refuses (on a real
    cluster: 403, and the administrator reads an error; with a broader role bound by hand, the
    namespace is labelled though no webhook exists to gate anything). The least-privilege test
    posts the toggle only in act mode. Fault: dashboard/views/namespaces.py (namespace_toggle
    and the page's can_toggle ignore settings.SLUICE_MODE)."""
    env = find(render("observe"), "ConfigMap", "sluice-env")["data"]
    assert env["SLUICE_MODE"] == "observe"
    sim.cluster.create_object("namespaces", body(namespace("team")))
    requests: list[RequestAttributes] = []
    sim.server.recorder = requests.append
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    kube.api_client.cache_clear()
    try:
        with override_settings(SLUICE_KUBECONFIG=str(kubeconfig), SLUICE_MODE=env["SLUICE_MODE"]):
            assert admin_client.get("/namespaces/").status_code == 200
            admin_client.get("/namespaces/team/opt-in/?enabled=true")
            admin_client.post("/namespaces/team/opt-in/", {"enabled": "true", "confirm": "on"})
    finally:
        kube.api_client.cache_clear()

    writes = sorted({(r.verb, r.resource, r.name) for r in requests if r.verb in WRITE_VERBS})
    refused = denied(requests, account_grants(render("observe"), "sluice", "sluice"))
    labels = sim.store.get("namespaces", "", "team")["metadata"].get("labels") or {}
    assert not writes and not refused, (
        f"observe mode's web sent {writes}; the observe overlay refuses {refused}; "
        f"namespace team labelled {labels.get(QUEUE_ALLOCATION_GATE)!r}"
    )
