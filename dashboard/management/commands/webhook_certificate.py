"""``python manage.py webhook_certificate``: the webhook's certificate, made once, and its
caBundle, written — the Job of deploy/components/webhook, for clusters without cert-manager.

The Secret (``kubernetes.io/tls``, with the CA as ``ca.crt``) is created when it does not exist
and kept when it does, so the serving certificate stays the one the webhook Deployment mounted;
then every webhook of the MutatingWebhookConfiguration gets that CA as its caBundle. Running it
again changes nothing. Its service account may create Secrets and read this one, and read and
patch this one configuration (deploy/components/webhook/certificate-job.yaml).
"""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError
from kubernetes import client
from kubernetes.client.rest import ApiException

from dashboard import kube
from dashboard.webhook_certificate import (
    WebhookCertificates,
    ca_bundle_patch,
    generate,
    service_dns_names,
)


class Command(BaseCommand):
    help = "Create the webhook's TLS Secret once and write its CA into the webhook configuration."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", "sluice"))
        parser.add_argument("--secret", default="sluice-webhook-tls")
        parser.add_argument("--service", default="sluice-webhook")
        parser.add_argument("--webhook-configuration", default="sluice")

    def handle(self, *args, namespace: str, secret: str, service: str, **options) -> None:
        api = kube.api_client()
        core = client.CoreV1Api(api)
        certificates = self._secret(core, namespace, secret, service)
        name = options["webhook_configuration"]
        admission = client.AdmissionregistrationV1Api(api)
        try:
            response = admission.read_mutating_webhook_configuration(name, _preload_content=False)
            patch = ca_bundle_patch(json.loads(response.data), certificates.ca)
            if patch:
                admission.patch_mutating_webhook_configuration(
                    name, patch, _content_type="application/json-patch+json"
                )
        except ApiException as exc:
            raise CommandError(f"MutatingWebhookConfiguration {name}: {exc.reason}") from exc
        done = "written" if patch else "already in place"
        self.stdout.write(f"caBundle of {name}: {done} (Secret {namespace}/{secret})")

    def _secret(
        self, core: client.CoreV1Api, namespace: str, secret: str, service: str
    ) -> WebhookCertificates:
        try:
            existing = core.read_namespaced_secret(secret, namespace)
            return WebhookCertificates.from_secret_data(existing.data or {})
        except ApiException as exc:
            if exc.status != 404:
                raise CommandError(f"Secret {namespace}/{secret}: {exc.reason}") from exc
        except KeyError as exc:
            raise CommandError(f"Secret {namespace}/{secret} has no {exc}") from exc
        certificates = generate(service_dns_names(service, namespace))
        body = client.V1Secret(
            metadata=client.V1ObjectMeta(name=secret, namespace=namespace),
            type="kubernetes.io/tls",
            data=certificates.secret_data(),
        )
        try:
            core.create_namespaced_secret(namespace, body)
        except ApiException as exc:
            if exc.status == 409:  # another run created it first: use that one
                return self._secret(core, namespace, secret, service)
            raise CommandError(f"Secret {namespace}/{secret}: {exc.reason}") from exc
        self.stdout.write(f"Secret {namespace}/{secret} created")
        return certificates
