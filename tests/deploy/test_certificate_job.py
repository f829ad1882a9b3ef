"""The act overlay's certificate Job against the simulated cluster, which serves Secrets and
MutatingWebhookConfigurations as kube-apiserver does and admits pods through the stored ones.

The rendered Namespace and MutatingWebhookConfiguration ``sluice`` are applied with
``kubectl apply``; the Job's own command (``manage.py webhook_certificate``) runs as the Job's
container would, with its environment (the ``sluice-env`` ConfigMap, ``POD_NAMESPACE`` from its
namespace), the simulated cluster's kubeconfig standing in for its service account. The API
server records each request's RBAC attributes (``simcluster.api.audit``): the Job's Role and
ClusterRole must allow all of them, and each of their grants must be used.

Then the whole TLS path through the stored configuration: gunicorn serves the webhook with the
Secret's certificate, the simulated cluster calls ``sluice-webhook.sluice.svc`` (reached through
``--webhook-service``) with the caBundle the Job wrote, and the configuration's own selectors
decide which pods reach it (counted in gunicorn's access log).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dashboard.webhook_certificate import WebhookCertificates
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from simcluster.api.app import parse_webhook_services
from simcluster.bootstrap import ensure_system_namespace
from tests.builders import body, namespace, pod
from tests.conftest import poll, require_binary
from tests.deploy.manifests import find, render
from tests.deploy.rbac import Recorder, account_grants, denied
from tests.deploy.webhook_server import calls, gates, serve_webhook
from tests.simcluster.api.conftest import Sim, start_sim

ROOT = Path(__file__).resolve().parents[2]
JOB = "sluice-webhook-certificate"
SECRET = "sluice-webhook-tls"
CONFIGURATION = "sluice"
SERVICE_HOST = "sluice-webhook.sluice.svc"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    """The simulated cluster with the act overlay's Namespace and MutatingWebhookConfiguration
    applied by kubectl, kube-system, and namespaces ``team`` (opted in) and ``other``."""
    running = start_sim()
    ensure_system_namespace(running.store)
    docs = render("act")
    manifests = [find(docs, "Namespace", "sluice"), configuration(docs)]
    kubeconfig = running.server.write_kubeconfig(tmp_path / "kubeconfig")
    applied = subprocess.run(
        [require_binary("kubectl", fallback="/usr/bin/kubectl"), "--kubeconfig", str(kubeconfig)]
        + ["apply", "-f", "-"],
        input="\n".join(json.dumps(m) for m in manifests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/sluice created" in (
        applied.stdout
    )
    running.cluster.create_object(
        "namespaces", body(namespace("team", labels={QUEUE_ALLOCATION_GATE: "true"}))
    )
    running.cluster.create_object("namespaces", body(namespace("other")))
    yield running
    running.api_client.close()
    running.server.stop()


def configuration(docs: tuple[dict, ...]) -> dict:
    return find(docs, "MutatingWebhookConfiguration", CONFIGURATION)


def job_environment(kubeconfig: Path) -> dict[str, str]:
    """What the Job's container gets: its envFrom ConfigMap and its env, resolved as the kubelet
    resolves them (``fieldRef metadata.namespace`` is the Job's namespace)."""
    docs = render("act")
    job = find(docs, "Job", JOB)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLUICE_", "DJANGO_", "SECURE_", "DATABASE_", "REDIS_"))
        and k not in ("DEBUG", "SECRET_KEY")
    }
    for source in container["envFrom"]:
        env.update(find(docs, "ConfigMap", source["configMapRef"]["name"])["data"])
    for entry in container["env"]:
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        elif entry["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[entry["name"]] = job["metadata"]["namespace"]
        elif entry["valueFrom"].get("secretKeyRef", {}).get("key") == "SECRET_KEY":
            env[entry["name"]] = secrets.token_urlsafe(50)
        else:
            raise AssertionError(f"the Job's env {entry} is not resolved by this test")
    # Its service account's credentials: here, the simulated cluster's kubeconfig.
    env["SLUICE_KUBECONFIG"] = str(kubeconfig)
    return env


def run_job(sim: Sim, tmp_path: Path) -> str:
    (container,) = find(render("act"), "Job", JOB)["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["python", "manage.py"]
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "job-kubeconfig")
    done = subprocess.run(
        [sys.executable, *command[1:]],
        cwd=ROOT,
        env=job_environment(kubeconfig),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def bundles(sim: Sim) -> list[str]:
    stored = sim.store.get("mutatingwebhookconfigurations", "", CONFIGURATION)
    return [hook["clientConfig"].get("caBundle", "") for hook in stored["webhooks"]]


def stored_certificates(sim: Sim) -> WebhookCertificates:
    secret = sim.store.get("secrets", "sluice", SECRET)
    assert secret["type"] == "kubernetes.io/tls"
    return WebhookCertificates.from_secret_data(secret["data"])


def test_the_job_creates_the_secret_and_patches_the_ca_bundle_once_within_its_grants(
    sim: Sim, tmp_path: Path
) -> None:
    recorder = Recorder()
    sim.server.recorder = recorder
    assert bundles(sim) == ["", ""]

    first = run_job(sim, tmp_path)

    assert f"Secret sluice/{SECRET} created" in first
    assert f"caBundle of {CONFIGURATION}: written" in first
    certificates = stored_certificates(sim)
    ca = base64.b64encode(certificates.ca).decode()
    assert bundles(sim) == [ca, ca]
    first_requests = recorder.taken()
    assert [(r.verb, r.resource, r.namespace, r.name) for r in first_requests] == [
        ("get", "secrets", "sluice", SECRET),  # 404: not there yet
        ("create", "secrets", "sluice", ""),
        ("get", "mutatingwebhookconfigurations", "", CONFIGURATION),
        ("patch", "mutatingwebhookconfigurations", "", CONFIGURATION),
    ]
    secret_version = sim.store.get("secrets", "sluice", SECRET)["metadata"]["resourceVersion"]
    configuration_version = sim.store.get("mutatingwebhookconfigurations", "", CONFIGURATION)[
        "metadata"
    ]["resourceVersion"]

    second = run_job(sim, tmp_path)

    assert f"caBundle of {CONFIGURATION}: already in place" in second
    assert "created" not in second
    assert stored_certificates(sim) == certificates
    assert sim.store.get("secrets", "sluice", SECRET)["metadata"]["resourceVersion"] == (
        secret_version
    )
    assert sim.store.get("mutatingwebhookconfigurations", "", CONFIGURATION)["metadata"][
        "resourceVersion"
    ] == (configuration_version)
    second_requests = recorder.taken()
    assert [(r.verb, r.resource) for r in second_requests] == [
        ("get", "secrets"),
        ("get", "mutatingwebhookconfigurations"),
    ]

    requests = first_requests + second_requests
    grants = account_grants(render("act"), JOB, "sluice")
    assert not denied(requests, grants), denied(requests, grants)
    unused = [g for g in grants if not any(g.allows(r) for r in requests)]
    assert not unused, f"granted to the Job, never used: {unused}"
    assert {(g.group, g.resource, g.verb) for g in grants} == {
        ("", "secrets", "create"),
        ("", "secrets", "get"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"),
    }


def test_a_job_without_its_grants_would_be_refused(sim: Sim, tmp_path: Path) -> None:
    """The grant check can fail: the Job's requests against a Role without the patch, or with
    the Secret's get named for another Secret, are refused."""
    recorder = Recorder()
    sim.server.recorder = recorder
    run_job(sim, tmp_path)
    requests = recorder.taken()
    grants = account_grants(render("act"), JOB, "sluice")
    without_patch = [g for g in grants if g.verb != "patch"]
    assert denied(requests, without_patch) == {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch")
    }
    renamed = [
        dataclasses.replace(g, names=frozenset({"other"}))
        if (g.resource, g.verb) == ("secrets", "get")
        else g
        for g in grants
    ]
    assert denied(requests, renamed) == {("", "secrets", "get")}


def create(sim: Sim, name: str, ns: str, *, labels=None, annotations=None) -> dict:
    manifest = body(pod(name, namespace=ns, labels=labels))
    if annotations:
        manifest["metadata"]["annotations"] = annotations
    client.CoreV1Api(sim.api_client).create_namespaced_pod(ns, manifest)
    return sim.store.get("pods", ns, name)


def test_pods_reach_the_webhook_over_tls_as_the_stored_configuration_selects(
    sim: Sim, tmp_path: Path
) -> None:
    run_job(sim, tmp_path)
    certificates = stored_certificates(sim)  # as the Deployment mounts the Secret at /tls
    access_log = tmp_path / "access.log"
    kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
    with serve_webhook(kubeconfig, certificates, tmp_path, access_log=access_log) as address:
        sim.cluster.webhook_services = parse_webhook_services([f"{SERVICE_HOST}={address[1]}"])
        poll(lambda: calls(access_log) >= 4, timeout=10)  # the warm-up's
        seen = [calls(access_log)]

        def reached(expected: int) -> bool:
            """Whether the last pod reached the webhook ``expected`` (0 or 1) times."""
            if expected:
                poll(lambda: calls(access_log) >= seen[-1] + expected, timeout=10)
            else:
                time.sleep(0.3)
            seen.append(calls(access_log))
            return seen[-1] - seen[-2] == expected

        opted = {QUEUE_ALLOCATION_GATE: "true"}
        # An opted-in namespace: every pod is gated through the first webhook.
        assert gates(create(sim, "team-pod", "team")) == [QUEUE_ALLOCATION_GATE]
        assert reached(1)
        # Another namespace: a pod that does not opt in never reaches the webhook.
        assert gates(create(sim, "other-pod", "other")) == []
        assert reached(0)
        # There a pod opts in with the label (the objectSelector) and the annotation (what
        # the webhook reads): the second webhook gates it.
        opted_in = create(sim, "opted", "other", labels=opted, annotations=opted)
        assert gates(opted_in) == [QUEUE_ALLOCATION_GATE]
        assert reached(1)
        # The label alone reaches the webhook, which finds no annotation and leaves it.
        assert gates(create(sim, "label-only", "other", labels=opted)) == []
        assert reached(1)
        # The annotation alone never reaches it: the API server's objectSelector sees labels.
        assert gates(create(sim, "annotation-only", "other", annotations=opted)) == []
        assert reached(0)
        # kube-system is left out even for a pod that opts in.
        assert gates(create(sim, "system", "kube-system", labels=opted, annotations=opted)) == []
        assert reached(0)
        # In the opted-in namespace a pod that also carries the label is called once, not twice.
        assert gates(create(sim, "both", "team", labels=opted)) == [QUEUE_ALLOCATION_GATE]
        assert reached(1)


def test_a_pod_the_selectors_leave_out_never_calls_an_unreachable_webhook(
    sim: Sim, tmp_path: Path
) -> None:
    """With the Job's caBundle in place but no endpoint for the Service and failurePolicy Fail:
    a selected pod's creation fails, one the selectors leave out is created."""
    run_job(sim, tmp_path)
    admission = client.AdmissionregistrationV1Api(sim.api_client)
    admission.patch_mutating_webhook_configuration(
        CONFIGURATION,
        [
            {"op": "replace", "path": f"/webhooks/{i}/failurePolicy", "value": "Fail"}
            for i in range(2)
        ],
    )
    assert sim.cluster.webhook_services == {}
    with pytest.raises(ApiException) as refused:
        create(sim, "selected", "team")
    assert refused.value.status == 500
    assert 'no endpoints available for service \\"sluice-webhook\\"' in refused.value.body
    with pytest.raises(ApiException):
        create(sim, "labelled", "other", labels={QUEUE_ALLOCATION_GATE: "true"})
    assert create(sim, "left-out", "other")["metadata"]["name"] == "left-out"
    assert create(sim, "system", "kube-system", labels={QUEUE_ALLOCATION_GATE: "true"})
