"""Two ``manage.py schedule --leader-elect`` processes against one simulated cluster: the
leader is killed with SIGKILL in the middle of its run; the standby takes the Lease over within
two lease periods, keeps the pipelined decision the dead leader persisted
(``status.nominatedNodeName``), binds what is left, and no pod is ever bound twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from kubernetes import client

from simcluster.store import WatchEvent
from tests.builders import body, node, pod, queue
from tests.conftest import wait_until
from tests.simcluster.api.conftest import start_sim

ROOT = Path(__file__).resolve().parents[2]
LEASE_S, RENEW_S, RETRY_S = 3.0, 2.0, 0.5


class Bindings:
    """Every pod's nodeName and nominatedNodeName as the store writes them, under its lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bound: dict[str, list[str]] = {}  # pod name -> every node it was bound to
        self.nominated: dict[str, list[str]] = {}

    def __call__(self, event: WatchEvent) -> None:
        if event.kind != "pods" or event.type != "MODIFIED":
            return  # a pod created with its nodeName ("old") was never bound by a scheduler
        name = event.object["metadata"]["name"]
        before = event.previous or {}
        was = (before.get("spec") or {}).get("nodeName") or ""
        now = (event.object.get("spec") or {}).get("nodeName") or ""
        nominated = (event.object.get("status") or {}).get("nominatedNodeName") or ""
        was_nominated = (before.get("status") or {}).get("nominatedNodeName") or ""
        with self.lock:
            if now and now != was:
                self.bound.setdefault(name, []).append(now)
            if nominated and nominated != was_nominated:
                self.nominated.setdefault(name, []).append(nominated)


def scheduler(kubeconfig: Path, log: Path) -> subprocess.Popen:
    args = [
        sys.executable, str(ROOT / "manage.py"), "schedule", "--kubeconfig", str(kubeconfig),
        "--mode", "act", "--period", "0.3", "--leader-elect",
        "--leader-elect-lease-duration", str(LEASE_S),
        "--leader-elect-renew-deadline", str(RENEW_S),
        "--leader-elect-retry-period", str(RETRY_S),
        "--leader-elect-resource-namespace", "default",
    ]  # fmt: skip
    env = {**os.environ, "SLUICE_DEV_SECRET": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def holder(api: client.CoordinationV1Api) -> str:
    try:
        return api.read_namespaced_lease("volcano", "default").spec.holder_identity or ""
    except client.ApiException:
        return ""


def test_the_standby_takes_over_from_a_killed_leader_and_loses_nothing(tmp_path: Path) -> None:
    sim = start_sim()
    seen = Bindings()
    sim.store.add_observer(seen)
    leases = client.CoordinationV1Api(sim.api_client)
    processes: list[subprocess.Popen] = []
    try:
        for name in ("n1", "n2", "n3"):
            sim.core.create_node(body(node(name, cpu="2", ready=True)))
        sim.custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", body(queue("default"))
        )
        # n1 is full with a pod that terminates slowly (no kubelet here): "next" is pipelined
        # there, waiting for it.
        old = body(pod("old", "2", namespace="default"))
        old["spec"]["nodeName"] = "n1"
        sim.core.create_namespaced_pod("default", old)
        sim.core.delete_namespaced_pod("old", "default", grace_period_seconds=600)
        for i in range(4):
            sim.core.create_namespaced_pod("default", body(pod(f"a-{i}", "1", namespace="default")))
        kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

        first = scheduler(kubeconfig, tmp_path / "first.log")
        processes.append(first)
        wait_until(lambda: f"_pid{first.pid}_" in holder(leases), timeout=30)
        wait_until(lambda: len(seen.bound) == 4, timeout=30)  # n2 and n3 are full
        sim.core.create_namespaced_pod("default", body(pod("next", "2", namespace="default")))
        wait_until(lambda: seen.nominated.get("next"), timeout=30)
        assert seen.nominated["next"] == ["n1"]

        second = scheduler(kubeconfig, tmp_path / "second.log")
        processes.append(second)
        wait_until(lambda: "standing by" in (tmp_path / "second.log").read_text(), timeout=30)
        assert f"_pid{first.pid}_" in holder(leases)  # the standby did not take over
        assert "cycle" not in (tmp_path / "second.log").read_text()  # nor run a cycle

        # More work and a node for it arrive; the leader is killed in the middle of its run.
        # (n4 has no room for "next": its decision on n1 stays the only place for it)
        sim.core.create_node(body(node("n4", cpu="1500m", ready=True)))
        for i in range(3):
            b = pod(f"b-{i}", "500m", namespace="default")
            sim.core.create_namespaced_pod("default", body(b))
        time.sleep(0.15)
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        first.wait(timeout=10)

        wait_until(lambda: f"_pid{second.pid}_" in holder(leases), timeout=4 * LEASE_S)
        took_over = time.monotonic() - killed
        assert took_over <= 2 * LEASE_S, took_over
        names = [f"a-{i}" for i in range(4)] + [f"b-{i}" for i in range(3)]
        wait_until(lambda: all(name in seen.bound for name in names), timeout=2 * LEASE_S + 20)

        # The pipelined decision survived the failover: still n1, and bound there once the
        # pod holding n1 is gone.
        assert sim.core.read_namespaced_pod("next", "default").status.nominated_node_name == "n1"
        sim.core.delete_namespaced_pod("old", "default", grace_period_seconds=0)
        wait_until(lambda: "next" in seen.bound, timeout=20)
        with seen.lock:
            assert seen.bound["next"] == ["n1"]
            assert seen.nominated["next"] == ["n1"]  # never re-pipelined elsewhere
            twice = {name: nodes for name, nodes in seen.bound.items() if len(nodes) > 1}
            assert twice == {}
            assert sorted(seen.bound) == sorted([*names, "next"])

        # A clean stop (Ctrl-C) releases the Lease.
        second.send_signal(signal.SIGINT)
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            log = (tmp_path / "second.log").read_text()[-4000:]
            raise AssertionError(
                f"the standby did not stop within 30 s of SIGINT:\n{log}"
            ) from None
        assert holder(leases) == ""
        print(f"takeover {took_over:.2f} s after SIGKILL (lease {LEASE_S:g} s)")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        sim.api_client.close()
        sim.server.stop()
