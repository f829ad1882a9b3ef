"""`make run` under supervisord, for real: each process killed with SIGKILL comes back and the
stack goes on scheduling; the simulated cluster comes back as it was (same kube-system UID,
same pods) after a kill and after a restart of the whole stack, and `--fresh` starts a new one.
No SECRET_KEY anywhere: the development default is generated into the run directory."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import yaml

from tests.conftest import poll
from tests.dashboard.test_make_run import processes_with_environment

ROOT = Path(__file__).resolve().parents[2]
# The order matters little; the simulated cluster first, so that what follows runs against
# the restored one.
KILLED = ["sim", "redis", "scheduler", "gates", "beat", "web"]


class Stack:
    def __init__(self, tmp_path: Path, port: int) -> None:
        self.tmp_path, self.port = tmp_path, port
        self.run_dir = tmp_path / "run"
        self.conf = self.run_dir / "supervisord.conf"
        self.kubeconfig = self.run_dir / "kubeconfig"
        self.log = tmp_path / "run.log"
        self.db = tmp_path / "db.sqlite3"
        self.env = {
            **os.environ,
            "SLUICE_RUN_DIR": str(self.run_dir),
            "SLUICE_WEB_PORT": str(port),
            "DATABASE_URL": f"sqlite:///{self.db}",
            # A worker killed in a cycle holds the cycle lock until it expires.
            "SLUICE_CYCLE_LOCK_TTL": "10",
        }
        for name in ("REDIS_URL", "SECRET_KEY", "SLUICE_DEV_SECRET", "DEBUG", "SLUICE_ENV"):
            self.env.pop(name, None)
        self.process: subprocess.Popen | None = None

    def start(self, *args: str) -> None:
        output = self.log.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "scripts/run_local.py", *args],
            cwd=ROOT,
            env=self.env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        output.close()

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        marker = f"SLUICE_RUN_DIR={self.run_dir}"
        left = poll(lambda: not processes_with_environment(marker), timeout=20, interval=0.5)
        assert left, f"processes left behind: {processes_with_environment(marker)}"

    def tail(self) -> str:
        return self.log.read_text()[-4000:]

    def ctl(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()

    def running_pid(self, name: str) -> int | None:
        """The pid of ``name`` once supervisord says it is RUNNING (up for startsecs)."""
        words = self.ctl("status", name).split()
        if len(words) >= 4 and words[1] == "RUNNING" and words[2] == "pid":
            return int(words[3].rstrip(","))
        return None

    def restarted(self, name: str, killed: int) -> int | None:
        """The pid of ``name`` once a process other than ``killed`` is RUNNING."""
        pid = self.running_pid(name)
        return pid if pid != killed else None

    def cluster(self, path: str) -> dict | None:
        """GET ``path`` from the simulated cluster the kubeconfig names, None while it is down."""
        try:
            server = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            with urllib.request.urlopen(server + path, timeout=3) as response:
                return json.load(response)
        except (OSError, ValueError, TypeError, KeyError, yaml.YAMLError):
            return None

    def cluster_id(self) -> str | None:
        namespace = self.cluster("/api/v1/namespaces/kube-system")
        return namespace["metadata"]["uid"] if namespace else None

    def pods(self) -> dict[str, tuple[str, bool]] | None:
        listed = self.cluster("/api/v1/pods")
        if listed is None:
            return None
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": (
                p["metadata"]["uid"],
                bool(p["spec"].get("nodeName")),
            )
            for p in listed["items"]
        }

    def successful_cycles_since(self, since: float) -> int:
        if not self.db.exists():
            return 0
        with sqlite3.connect(self.db) as db:
            rows = db.execute(
                "SELECT started_at FROM dashboard_cycle WHERE NOT failed ORDER BY started_at DESC"
                " LIMIT 50"
            ).fetchall()
        # Django keeps UTC without an offset in SQLite.
        times = [datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp() for (at,) in rows]
        return sum(1 for at in times if at > since)

    def web_answers(self) -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=3).close()
        except urllib.error.HTTPError as exc:
            return exc.code < 500
        except OSError:
            return False
        return True


def test_make_run_restarts_what_is_killed_and_keeps_the_simulated_cluster(tmp_path, free_port):
    stack = Stack(tmp_path, free_port)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=stack.env,
        check=True,
        capture_output=True,
    )
    stack.start()
    try:
        bound = poll(
            lambda: any(b for _, b in (stack.pods() or {}).values()), timeout=120, interval=0.5
        )
        assert bound, f"no pod bound; log:\n{stack.tail()}"
        assert poll(lambda: stack.successful_cycles_since(0), timeout=60, interval=0.5)
        assert (stack.run_dir / "secret_key").exists()  # no SECRET_KEY: the dev default
        cluster_id, pods = stack.cluster_id(), stack.pods()
        assert cluster_id and pods

        for name in KILLED:
            before = poll(lambda name=name: stack.running_pid(name), timeout=60, interval=0.5)
            assert before, f"{name} not running: {stack.ctl('status')}"
            os.kill(before, signal.SIGKILL)
            after = poll(lambda n=name, b=before: stack.restarted(n, b), timeout=60, interval=0.5)
            assert after, f"{name} not restarted: {stack.ctl('status')}\n{stack.tail()}"
            if name == "sim":
                # The same cluster: its identity, and the pods it had (a pod the demo deleted
                # meanwhile aside), each with its UID.
                assert poll(stack.cluster_id, timeout=30, interval=0.5) == cluster_id
                now = stack.pods() or {}
                kept = {k: v[0] for k, v in now.items() if k in pods}
                assert len(kept) >= len(pods) // 2, (pods, now)
                assert kept == {k: pods[k][0] for k in kept}
        supervisord = (stack.run_dir / "supervisord.log").read_text()
        for name in KILLED:
            assert f"exited: {name} (terminated by SIGKILL; not expected)" in supervisord

        # Every process is back and they work together again: beat sends cycles through Redis
        # to the scheduler worker, which stores them through the gates worker's default queue.
        killed_at = time.time()
        assert poll(lambda: stack.successful_cycles_since(killed_at), timeout=90, interval=1), (
            f"no cycle stored since the kills; log:\n{stack.tail()}"
        )
        assert poll(stack.web_answers, timeout=30, interval=0.5)
        pods_at_stop = stack.pods() or {}
    finally:
        stack.stop()

    # The whole stack again: the simulated cluster is the one that was stopped.
    stack.start()
    try:
        assert poll(stack.cluster_id, timeout=120, interval=0.5) == cluster_id, stack.tail()
        now = stack.pods() or {}
        kept = {k: v[0] for k, v in now.items() if k in pods_at_stop}
        assert len(kept) >= len(pods_at_stop) // 2, (pods_at_stop, now)
        assert kept == {k: pods_at_stop[k][0] for k in kept}
        assert "Restored the simulated cluster" in stack.log.read_text()
    finally:
        stack.stop()

    # make run-fresh: a new cluster.
    stack.start("--fresh")
    try:
        fresh = poll(stack.cluster_id, timeout=120, interval=0.5)
        assert fresh and fresh != cluster_id, stack.tail()
    finally:
        stack.stop()
