"""Adversary, Part 14: the simulated API server's webhook call against an expired certificate.

A loopback HTTPS server presents a serving certificate made as the certificate Job makes it
(``dashboard.webhook_certificate.generate``) for ``sluice-webhook.sluice.svc``, and answers any
AdmissionReview with the queue-allocation gate. The simulated cluster calls it with the act
overlay's rendered webhook entry, its caBundle being that certificate's CA (held: regression
tests).
"""

from __future__ import annotations

import base64
import copy
import datetime
import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import jsonpatch
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dashboard.webhook_certificate import (
    VALIDITY,
    WebhookCertificates,
    ca_bundle_patch,
    generate,
    service_dns_names,
)
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from simcluster.api import Webhook
from tests.builders import body, namespace, pod
from tests.deploy.manifests import find, render

GATE_PATCH = [
    {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": QUEUE_ALLOCATION_GATE}]}
]


def serve_tls(certificates: WebhookCertificates, tmp_path: Path):
    (tmp_path / "tls.crt").write_bytes(certificates.certificate)
    (tmp_path / "tls.key").write_bytes(certificates.key)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {
                        "uid": review["request"]["uid"],
                        "allowed": True,
                        "patchType": "JSONPatch",
                        "patch": base64.b64encode(json.dumps(GATE_PATCH).encode()).decode(),
                    },
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def team(sim):
    sim.cluster.create_object(
        "namespaces", body(namespace("team", labels={QUEUE_ALLOCATION_GATE: "true"}))
    )
    return sim


def entry_trusting(certificates: WebhookCertificates, failure_policy: str) -> dict:
    configuration = copy.deepcopy(find(render("act"), "MutatingWebhookConfiguration", "sluice"))
    configuration = jsonpatch.apply_patch(
        configuration, ca_bundle_patch(configuration, certificates.ca)
    )
    return {**configuration["webhooks"][0], "failurePolicy": failure_policy}


@pytest.fixture
def expired(tmp_path) -> Iterator[tuple[WebhookCertificates, tuple[str, int]]]:
    long_ago = datetime.datetime.now(datetime.UTC) - VALIDITY - datetime.timedelta(days=1)
    certificates = generate(service_dns_names("sluice-webhook", "sluice"), now=long_ago)
    server = serve_tls(certificates, tmp_path)
    yield certificates, server.server_address[:2]
    server.shutdown()
    server.server_close()


@pytest.fixture
def current(tmp_path) -> Iterator[tuple[WebhookCertificates, tuple[str, int]]]:
    certificates = generate(service_dns_names("sluice-webhook", "sluice"))
    server = serve_tls(certificates, tmp_path)
    yield certificates, server.server_address[:2]
    server.shutdown()
    server.server_close()


def create(sim, name: str) -> dict:
    client.CoreV1Api(sim.api_client).create_namespaced_pod(
        "team", body(pod(name, namespace="team"))
    )
    return sim.store.get("pods", "team", name)


def gates(obj: dict) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates") or []]


def test_a_current_certificate_of_the_bundles_ca_is_trusted(team, current):
    """The control: the same server with a current certificate gates the pod."""
    certificates, address = current
    team.cluster.webhook = Webhook.from_configuration(
        entry_trusting(certificates, "Fail"), dial=address
    )
    assert gates(create(team, "trusted")) == [QUEUE_ALLOCATION_GATE]


def test_an_expired_certificate_is_refused_and_ignore_lets_the_pod_through(team, expired):
    """Promise (issue 19): "a certificate the bundle does not trust is refused" — an expired
    one of the bundle's own CA, for the right name, included; failurePolicy Ignore then
    admits the pod ungated."""
    certificates, address = expired
    team.cluster.webhook = Webhook.from_configuration(
        entry_trusting(certificates, "Fail"), dial=address
    )
    with pytest.raises(ApiException) as refused:
        create(team, "refused")
    assert refused.value.status == 500
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.body
    assert "expired" in refused.value.body

    team.cluster.webhook = Webhook.from_configuration(
        entry_trusting(certificates, "Ignore"), dial=address
    )
    assert gates(create(team, "let-through")) == []
