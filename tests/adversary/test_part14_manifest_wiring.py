"""Adversary, Part 14: the rendered overlays are wired to each other and to the code.

What ``kubectl apply`` accepts and still does not run: a Deployment whose selector misses its
own pods, a Service or probe naming a port no container has, an env var the code never reads
(a misspelling), a Celery queue no worker consumes, a certificate Job writing a Secret the
webhook does not mount or whose RBAC names other objects than its command. Each held when
tried (regression tests).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.deploy.manifests import OVERLAYS, find, render

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ("Deployment", "StatefulSet", "Job")
# Read by images that are not Sluice's (postgres:16, redis:7).
THIRD_PARTY_ENV = {"PGDATA", "POSTGRES_DB", "POSTGRES_PASSWORD", "POSTGRES_USER"}


def workloads(docs):
    return [d for d in docs if d["kind"] in WORKLOADS]


def containers(doc) -> list[dict]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def port_names(container: dict) -> set:
    ports = container.get("ports", [])
    return {p.get("name") for p in ports} | {p["containerPort"] for p in ports}


def sluice_source() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for package in ("dashboard", "scheduler", "simcluster")
        for p in (ROOT / package).rglob("*.py")
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_workload_selects_its_own_pods(overlay):
    for doc in workloads(render(overlay)):
        selector = doc["spec"].get("selector", {}).get("matchLabels", {})
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in selector.items()), doc["metadata"]["name"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_service_reaches_one_workload_on_a_port_it_has(overlay):
    docs = render(overlay)
    for service in [d for d in docs if d["kind"] == "Service"]:
        selector = service["spec"]["selector"]
        matching = [
            d
            for d in workloads(docs)
            if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v
                   for k, v in selector.items())
        ]  # fmt: skip
        assert len(matching) == 1, (service["metadata"]["name"], matching)
        ports = set().union(*(port_names(c) for c in containers(matching[0])))
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_probe_names_a_port_of_its_container(overlay):
    for doc in workloads(render(overlay)):
        for container in containers(doc):
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                action = container.get(probe) or {}
                for kind in ("httpGet", "tcpSocket"):
                    if kind in action:
                        assert action[kind]["port"] in port_names(container), (
                            doc["metadata"]["name"],
                            probe,
                        )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_env_var_the_manifests_set_is_one_the_code_reads(overlay):
    """A misspelt SLUICE_* in the ConfigMap or a container's env is silently ignored."""
    docs = render(overlay)
    names: set[str] = set()
    for doc in workloads(docs):
        for container in containers(doc):
            names |= {e["name"] for e in container.get("env", [])}
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    names |= set(find(docs, "ConfigMap", source["configMapRef"]["name"])["data"])
                else:
                    secret = find(docs, "Secret", source["secretRef"]["name"])
                    names |= set(secret.get("data") or secret.get("stringData") or {})
    code = sluice_source()
    unread = {
        n for n in names - THIRD_PARTY_ENV if not re.search(rf"['\"]{re.escape(n)}['\"]", code)
    }
    assert not unread, unread


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_celery_workers_consume_every_queue_a_task_is_sent_to(overlay):
    docs = render(overlay)
    consumed: set[str] = set()
    for doc in workloads(docs):
        for container in containers(doc):
            command = container.get("command") or []
            if command[:1] == ["celery"] and "worker" in command:
                consumed |= set(command[command.index("-Q") + 1].split(","))
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    beat = {e["options"]["queue"] for e in settings.CELERY_BEAT_SCHEDULE.values()
            if "queue" in e.get("options", {})}  # fmt: skip
    assert routed | beat | {settings.CELERY_TASK_DEFAULT_QUEUE} <= consumed


def test_the_certificate_job_writes_what_the_webhook_mounts_and_its_rbac_names_it():
    docs = render("act")
    job = find(docs, "Job", "sluice-webhook-certificate")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    secret = command[command.index("--secret") + 1]
    service = command[command.index("--service") + 1]
    configuration = command[command.index("--webhook-configuration") + 1]
    webhook = find(docs, "Deployment", "sluice-webhook")["spec"]["template"]["spec"]
    assert {"name": "tls", "secret": {"secretName": secret}} in webhook["volumes"]
    find(docs, "Service", service)
    find(docs, "MutatingWebhookConfiguration", configuration)
    role = find(docs, "Role", "sluice-webhook-certificate")
    assert any(secret in r.get("resourceNames", []) and "get" in r["verbs"] for r in role["rules"])
    cluster_role = find(docs, "ClusterRole", "sluice-webhook-certificate")
    assert cluster_role["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "resourceNames": [configuration],
            "verbs": ["get", "patch"],
        }
    ]
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "sluice-webhook-certificate"


def test_the_webhook_configuration_calls_the_webhook_service_on_its_port():
    docs = render("act")
    service = find(docs, "Service", "sluice-webhook")
    for webhook in find(docs, "MutatingWebhookConfiguration", "sluice")["webhooks"]:
        target = webhook["clientConfig"]["service"]
        assert target["name"] == service["metadata"]["name"]
        assert target["namespace"] == service["metadata"]["namespace"]
        assert target["port"] in {p["port"] for p in service["spec"]["ports"]}
        assert target["path"] == "/webhooks/mutate-pods"


def test_the_dockerfile_installs_the_programs_the_manifests_run():
    """Every command's program is the image's python or a console script of a dependency the
    Dockerfile installs (``pip install .``)."""
    from importlib.metadata import distribution

    scripts = {
        ep.name
        for dist in ("gunicorn", "celery")
        for ep in distribution(dist).entry_points
        if ep.group == "console_scripts"
    }
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir ." in dockerfile
    assert "WORKDIR /app" in dockerfile
    for overlay in OVERLAYS:
        for doc in workloads(render(overlay)):
            for container in containers(doc):
                if container["image"].split(":")[0] != "sluice":
                    continue
                program = container["command"][0]
                assert program == "python" or program in scripts, (doc["metadata"]["name"], program)
                if program == "python":
                    assert container["command"][1] == "manage.py"
