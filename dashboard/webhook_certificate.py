"""The admission webhook's TLS: a CA and a serving certificate for its Service, and the caBundle.

kube-apiserver calls a webhook over HTTPS only and trusts the server certificate only when it
chains to the configuration's ``clientConfig.caBundle`` and names the Service's DNS name
``<service>.<namespace>.svc`` (Kubernetes' "Dynamic Admission Control": contacting the
webhook). Without cert-manager, ``manage.py webhook_certificate`` (the Job in
deploy/components/webhook) makes both once with these functions and writes the caBundle.
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class WebhookCertificates:
    ca: bytes  # PEM: the caBundle
    certificate: bytes  # PEM: tls.crt, signed by ca
    key: bytes  # PEM: tls.key

    def secret_data(self) -> dict[str, str]:
        """The ``kubernetes.io/tls`` Secret's data (base64), with the CA as ``ca.crt``."""
        return {
            "tls.crt": _b64(self.certificate),
            "tls.key": _b64(self.key),
            "ca.crt": _b64(self.ca),
        }

    @classmethod
    def from_secret_data(cls, data: dict[str, str]) -> WebhookCertificates:
        return cls(
            ca=base64.b64decode(data["ca.crt"]),
            certificate=base64.b64decode(data["tls.crt"]),
            key=base64.b64decode(data["tls.key"]),
        )


def service_dns_names(service: str, namespace: str) -> list[str]:
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def generate(
    dns_names: list[str],
    *,
    now: datetime.datetime | None = None,
    ca_name: str = "sluice-webhook-ca",
) -> WebhookCertificates:
    """A new CA (its key is thrown away: nothing else is ever signed by it) and a serving
    certificate for ``dns_names`` signed by it."""
    now = now or datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return WebhookCertificates(
        ca=ca.public_bytes(serialization.Encoding.PEM),
        certificate=certificate.public_bytes(serialization.Encoding.PEM),
        key=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def ca_bundle_patch(configuration: dict, ca: bytes) -> list[dict]:
    """The JSON patch writing ``ca`` into every webhook's ``clientConfig.caBundle``; empty when
    each already has it. The ``test`` of each webhook's name makes it refuse a configuration
    changed in between (a webhook added, removed or reordered)."""
    bundle = _b64(ca)
    patch: list[dict] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        if (webhook.get("clientConfig") or {}).get("caBundle") == bundle:
            continue
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook["name"]})
        patch.append(
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle}
        )
    return patch


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
