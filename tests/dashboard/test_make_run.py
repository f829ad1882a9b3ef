"""The `make run` process tree for real: embedded Redis, web, both workers and beat come up,
/healthz/ready and /healthz/scheduler say so, and Ctrl-C leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import poll

ROOT = Path(__file__).resolve().parents[2]


def processes_with_environment(marker: str) -> list[int]:
    """PIDs whose environment contains ``marker`` (every process the run started has it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def fetch_health(port: int, path: str = "/healthz/scheduler") -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        return json.load(exc)
    except OSError:
        return None


def bound_demo_pods(kubeconfig: Path) -> list[str]:
    """Pods of the simulated cluster that the Celery scheduler worker has bound."""
    if not kubeconfig.exists():
        return []
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        pods = client.CoreV1Api(api).list_pod_for_all_namespaces(_request_timeout=3).items
    except Exception:  # the simulation may still be starting
        return []
    finally:
        api.close()
    return [p.metadata.name for p in pods if p.spec.node_name]


def test_make_run_processes_come_up_and_ctrl_c_stops_them_all(tmp_path, free_port):
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "SLUICE_RUN_DIR": str(run_dir),
        "SLUICE_WEB_PORT": str(free_port),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "SLUICE_DEV_SECRET": "1",
    }
    env.pop("REDIS_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    output = open(tmp_path / "run.log", "w")  # noqa: SIM115 - outlives the with-less Popen
    run = subprocess.Popen(
        [sys.executable, "scripts/run_local.py"],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    try:

        def everything_up():
            health = fetch_health(free_port)
            if health and len(health.get("workers", {}).get("connected", [])) == 2:
                return health
            return None

        health = poll(everything_up, timeout=90, interval=0.5)
        log = (tmp_path / "run.log").read_text()
        assert health, f"workers never connected; log:\n{log[-3000:]}"
        assert set(health["workers"]["queues"]) == {"scheduler", "gates", "default"}
        assert fetch_health(free_port, "/healthz/ready")["status"] == "ready"
        assert fetch_health(free_port, "/healthz") == {"status": "ok"}
        assert "Log in as 'admin'" in log
        assert (run_dir / "admin_password").exists()
        assert poll(lambda: fetch_health(free_port)["beat"]["alive"], timeout=40, interval=0.5), (
            log[-3000:]
        )
        pods = poll(lambda: bound_demo_pods(run_dir / "kubeconfig"), timeout=60, interval=0.5)
        log = (tmp_path / "run.log").read_text()
        assert pods, f"the scheduler bound no pod of the demo scenario; log:\n{log[-3000:]}"
        assert "cycle done" in log
        up = poll(lambda: fetch_health(free_port)["status"] == "up", timeout=30, interval=0.5)
        assert up, fetch_health(free_port)
    finally:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=30)
        output.close()
    leftovers = poll(
        lambda: not processes_with_environment(f"SLUICE_RUN_DIR={run_dir}"),
        timeout=15,
        interval=0.5,
    )
    assert leftovers, (
        f"processes left behind: {processes_with_environment(f'SLUICE_RUN_DIR={run_dir}')}"
    )
