"""deploy/: both overlays render, and every object is valid for Kubernetes v1.32's schemas."""

from __future__ import annotations

import kubernetes_validate
import pytest

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from tests.deploy.manifests import OVERLAYS, find, render

# The simulated cluster answers as kube-apiserver v1.32 (simcluster/api/resources.py).
KUBERNETES_VERSION = "1.32.0"
# cert-manager's kinds are CustomResourceDefinitions: no schema of Kubernetes' own describes
# them (kubernetes-validate bundles only the built-in API), so they are checked by hand below.
CRD_KINDS = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(overlay):
    docs = render(overlay)
    checked = 0
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            continue
        # strict: an unknown field (a typo) is an error, as kubectl apply --validate=strict
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        checked += 1
    assert checked >= 15


def test_a_typo_is_caught_by_the_validation():
    """The check above can fail: a misspelt field of a rendered Deployment is refused."""
    deployment = dict(find(render("act"), "Deployment", "sluice-web"))
    deployment["spec"] = {**deployment["spec"], "replica": 2}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_the_cert_manager_objects_name_the_webhook_secret_and_service():
    docs = render("act-cert-manager")
    certificate = find(docs, "Certificate", "sluice-webhook")
    assert certificate["spec"]["secretName"] == "sluice-webhook-tls"
    assert "sluice-webhook.sluice.svc" in certificate["spec"]["dnsNames"]
    assert (
        certificate["spec"]["issuerRef"]["name"]
        == find(docs, "Issuer", "sluice-selfsigned")["metadata"]["name"]
    )
    configuration = find(docs, "MutatingWebhookConfiguration", "sluice")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        "sluice/sluice-webhook"
    )
    assert not [d for d in docs if d["kind"] == "Job"]


def test_both_overlays_run_every_process_of_the_one_image():
    for overlay in ("observe", "act"):
        docs = render(overlay)
        deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
        replicas = {name: d["spec"]["replicas"] for name, d in deployments.items()}
        assert replicas["sluice-scheduler"] == 2
        assert replicas["sluice-beat"] == 1
        assert deployments["sluice-beat"]["spec"]["strategy"]["type"] == "Recreate"
        images = {
            c["image"]
            for d in deployments.values()
            if d["metadata"]["name"] not in ("sluice-redis",)
            for c in d["spec"]["template"]["spec"]["containers"]
        }
        assert images == {"sluice:latest"}
        web = deployments["sluice-web"]["spec"]["template"]["spec"]["containers"][0]
        assert web["command"][0] == "gunicorn"
        assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert web["readinessProbe"]["httpGet"]["path"] == "/healthz/ready"
        env = find(docs, "ConfigMap", "sluice-env")["data"]
        assert env["SLUICE_MODE"] == overlay
        stores = find(docs, "Secret", "sluice-stores")
        assert set(stores.get("data") or stores.get("stringData") or {}) == {
            "DATABASE_URL",
            "REDIS_URL",
        }
    assert not [d for d in render("observe") if d["kind"] == "MutatingWebhookConfiguration"]


def test_the_webhook_is_reached_only_by_opted_in_namespaces_and_pods_and_never_blocks():
    configuration = find(render("act"), "MutatingWebhookConfiguration", "sluice")
    by_namespace, by_pod = configuration["webhooks"]
    for webhook in (by_namespace, by_pod):
        assert webhook["failurePolicy"] == "Ignore"
        assert webhook["sideEffects"] == "None"
        assert webhook["timeoutSeconds"] <= 5
        assert webhook["rules"] == [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ]
        assert webhook["clientConfig"]["service"] == {
            "name": "sluice-webhook",
            "namespace": "sluice",
            "path": "/webhooks/mutate-pods",
            "port": 443,
        }
    assert by_namespace["namespaceSelector"] == {"matchLabels": {QUEUE_ALLOCATION_GATE: "true"}}
    assert "objectSelector" not in by_namespace
    assert by_pod["objectSelector"] == {"matchLabels": {QUEUE_ALLOCATION_GATE: "true"}}
    assert {
        "key": QUEUE_ALLOCATION_GATE,
        "operator": "NotIn",
        "values": ["true"],
    } in by_pod["namespaceSelector"]["matchExpressions"]
