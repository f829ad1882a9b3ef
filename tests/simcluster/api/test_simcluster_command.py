"""``manage.py simcluster`` end to end: serves, writes the kubeconfig, saves state on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from scheduler.admission.node_groups import load_node_groups
from simcluster.catalog import resolve
from tests.simcluster.api.helpers import http

ROOT = Path(__file__).resolve().parents[3]


def wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not written in {timeout} s"
        time.sleep(0.1)


def test_simcluster_serves_the_demo_scenario_and_saves_state(tmp_path):
    kubeconfig, state = tmp_path / "kubeconfig", tmp_path / "state.json"
    node_groups = tmp_path / "node-groups.yaml"
    command = [
        sys.executable,
        "manage.py",
        "simcluster",
        "--port",
        "0",
        "--scenario",
        "demo",
        "--kubeconfig",
        str(kubeconfig),
        "--state",
        str(state),
        "--speed",
        "10",
        "--node-groups-file",
        str(node_groups),
    ]
    env = {**os.environ, "DEBUG": "true", "SLUICE_DEV_SECRET": "true"}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(kubeconfig)
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        code, nodes = http(server, "GET", "/api/v1/nodes")
        assert code == 200 and nodes["items"]
        wait_for(node_groups)
        # What the node-capacity check reads: the demo's groups, templates and bounds.
        described = {g.name: g for g in load_node_groups(node_groups)}
        demo = {g.name: g for g in resolve("demo").node_groups}
        assert set(described) == set(demo)
        assert all(described[n].template == demo[n].template() for n in demo)
        assert all(described[n].max_size == demo[n].max_size for n in demo)
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert "Simulated cluster at" in stdout
    assert state.exists() and '"nodes"' in state.read_text()
