"""gunicorn serving the gate webhook as the act overlay's webhook Deployment runs it: its command,
environment and TLS files (the Secret ``sluice-webhook-tls`` as mounted at /tls), on loopback."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from dashboard.webhook_certificate import WebhookCertificates
from simcluster.api import Webhook
from simcluster.api.webhook import mutate_pod
from tests.builders import pod
from tests.conftest import pick_free_port, poll
from tests.deploy.manifests import find, render

ROOT = Path(__file__).resolve().parents[2]
ACCESS = "POST /webhooks/mutate-pods"


def gates(obj: dict) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates") or []]


@contextlib.contextmanager
def serve_webhook(
    kubeconfig: Path,
    certificates: WebhookCertificates,
    tmp_path: Path,
    *,
    warm_namespace: str = "team",
    access_log: Path | None = None,
) -> Iterator[tuple[str, int]]:
    """Yield the loopback address gunicorn serves HTTPS on. The webhook reads namespaces from
    the cluster of ``kubeconfig``; ``warm_namespace`` must be opted in there (the workers'
    first requests are made, as a readiness probe would, before any is timed). With
    ``access_log`` gunicorn logs each request there (one line per call to the webhook)."""
    docs = render("act")
    (container,) = find(docs, "Deployment", "sluice-webhook")["spec"]["template"]["spec"][
        "containers"
    ]
    tls = tmp_path / "tls"
    tls.mkdir()
    (tls / "tls.crt").write_bytes(certificates.certificate)
    (tls / "tls.key").write_bytes(certificates.key)
    port = pick_free_port()
    command = list(container["command"])
    assert command[0] == "gunicorn"
    command[command.index("--bind") + 1] = f"127.0.0.1:{port}"
    for flag, name in (("--certfile", "tls.crt"), ("--keyfile", "tls.key")):
        mounted = Path(command[command.index(flag) + 1])
        assert mounted.parent.as_posix() == container["volumeMounts"][0]["mountPath"]
        command[command.index(flag) + 1] = str(tls / name)
    if access_log is not None:
        command += ["--access-logfile", str(access_log)]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLUICE_", "DJANGO_", "SECURE_")) and k not in ("DEBUG",)
    }
    env.update(find(docs, "ConfigMap", "sluice-env")["data"])
    env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        REDIS_URL=f"redis://127.0.0.1:{pick_free_port()}/0",
        SLUICE_KUBECONFIG=str(kubeconfig),
        SLUICE_RUN_DIR=str(tmp_path / "run"),
    )
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:

        def answers() -> bool:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                return True
            except OSError:
                return process.poll() is not None

        poll(answers, timeout=60, interval=0.2)
        assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
        # As the readiness probe would: the workers' first requests (imports, the kubernetes
        # client) are not timed against the configuration's 3 s on this shared machine.
        warm = Webhook(
            "https://sluice-webhook.sluice.svc/webhooks/mutate-pods",
            "Fail",
            30.0,
            ca_bundle=certificates.ca,
            dial=("127.0.0.1", port),
        )
        for _ in range(4):
            warmed = mutate_pod(warm, warm_namespace, pod("warm", namespace=warm_namespace))
            assert gates(warmed)
        yield ("127.0.0.1", port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def calls(access_log: Path) -> int:
    """How many admission reviews gunicorn has answered, by its access log."""
    if not access_log.exists():
        return 0
    return sum(ACCESS in line for line in access_log.read_text().splitlines())
