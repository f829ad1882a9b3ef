"""The act overlay's webhook over TLS: the simulated cluster calls it as kube-apiserver would,
at ``https://sluice-webhook.sluice.svc/webhooks/mutate-pods`` with the rendered configuration's
caBundle, served by gunicorn run with the webhook Deployment's own command and settings."""

from __future__ import annotations

import copy
import ssl
from collections.abc import Iterator
from pathlib import Path

import jsonpatch
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dashboard.webhook_certificate import (
    WebhookCertificates,
    ca_bundle_patch,
    generate,
    service_dns_names,
)
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from simcluster.api import Webhook
from tests.builders import body, namespace, pod
from tests.deploy.manifests import find, render
from tests.deploy.webhook_server import gates, serve_webhook
from tests.simcluster.api.conftest import Sim, start_sim

ROOT = Path(__file__).resolve().parents[2]


def rendered_configuration(certificates: WebhookCertificates) -> dict:
    """The act overlay's MutatingWebhookConfiguration with its caBundle written as the
    certificate Job writes it."""
    configuration = copy.deepcopy(find(render("act"), "MutatingWebhookConfiguration", "sluice"))
    patch = ca_bundle_patch(configuration, certificates.ca)
    assert patch, "the rendered configuration has no caBundle yet"
    configuration = jsonpatch.apply_patch(configuration, patch)
    assert ca_bundle_patch(configuration, certificates.ca) == []  # written once
    return configuration


@pytest.fixture
def sim() -> Iterator[Sim]:
    running = start_sim()
    running.cluster.create_object(
        "namespaces", body(namespace("team", labels={QUEUE_ALLOCATION_GATE: "true"}))
    )
    yield running
    running.api_client.close()
    running.server.stop()


@pytest.fixture
def certificates() -> WebhookCertificates:
    return generate(service_dns_names("sluice-webhook", "sluice"))


@pytest.fixture
def webhook_server(sim: Sim, certificates: WebhookCertificates, tmp_path: Path):
    """gunicorn with the rendered webhook Deployment's command, environment and TLS files."""
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    with serve_webhook(kubeconfig, certificates, tmp_path) as address:
        yield address


def create_pod(sim: Sim, name: str, namespace: str = "team") -> dict:
    core = client.CoreV1Api(sim.api_client)
    core.create_namespaced_pod(namespace, body(pod(name, namespace=namespace)))
    return sim.store.get("pods", namespace, name)


def test_a_pod_is_gated_through_the_webhook_over_tls(sim, certificates, webhook_server):
    configuration = rendered_configuration(certificates)
    by_namespace = configuration["webhooks"][0]
    sim.cluster.webhook = Webhook.from_configuration(by_namespace, dial=webhook_server)
    assert sim.cluster.webhook.url == ("https://sluice-webhook.sluice.svc:443/webhooks/mutate-pods")
    assert sim.cluster.webhook.failure_policy == "Ignore"

    created = create_pod(sim, "gated")

    assert gates(created) == [QUEUE_ALLOCATION_GATE]
    assert created["metadata"]["annotations"][QUEUE_ALLOCATION_GATE] == "true"
    # A namespace that is not opted in: the webhook answers, and leaves the pod alone.
    sim.cluster.create_object("namespaces", body(namespace("other")))
    assert gates(create_pod(sim, "free", "other")) == []


def test_a_certificate_the_bundle_does_not_trust_is_refused(sim, certificates, webhook_server):
    """The server presents a certificate of another CA than the configuration's bundle: the
    call fails, and failurePolicy Ignore lets the pod through ungated."""
    impostor = generate(service_dns_names("sluice-webhook", "sluice"))
    configuration = rendered_configuration(impostor)  # the bundle trusts the impostor's CA only
    entry = configuration["webhooks"][0]
    strict = Webhook.from_configuration({**entry, "failurePolicy": "Fail"}, dial=webhook_server)
    sim.cluster.webhook = strict

    with pytest.raises(ApiException) as refused:
        create_pod(sim, "refused")
    assert refused.value.status == 500
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.body
    assert f'failed calling webhook \\"{entry["name"]}\\"' in refused.value.body

    sim.cluster.webhook = Webhook.from_configuration(entry, dial=webhook_server)  # Ignore
    assert gates(create_pod(sim, "let-through")) == []


def test_a_certificate_for_another_name_is_refused(sim, certificates, webhook_server):
    """The bundle's CA signed it, but for another Service: the host name check refuses it."""
    configuration = rendered_configuration(certificates)
    entry = configuration["webhooks"][0]
    entry["clientConfig"]["service"] = {**entry["clientConfig"]["service"], "name": "elsewhere"}
    sim.cluster.webhook = Webhook.from_configuration(
        {**entry, "failurePolicy": "Fail"}, dial=webhook_server
    )
    with pytest.raises(ApiException) as refused:
        create_pod(sim, "wrong-name")
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.body
    assert "elsewhere.sluice.svc" in refused.value.body


def test_the_generated_certificate_chains_to_its_ca_for_the_service_names(certificates):
    context = ssl.create_default_context(cadata=certificates.ca.decode())
    assert context.cert_store_stats()["x509_ca"] == 1
    again = WebhookCertificates.from_secret_data(certificates.secret_data())
    assert again == certificates
