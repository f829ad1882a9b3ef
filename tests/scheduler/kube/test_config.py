"""The scheduler follows the simulated cluster's clock through the kubeconfig it writes."""

from __future__ import annotations

import time

from scheduler.clock import WallClock
from scheduler.kube.config import clock_from_kubeconfig


def test_a_scheduler_follows_a_sped_up_simulation(sim, tmp_path):
    simulation_clock = WallClock(speed=60, start=1_000_000.0)
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig", clock=simulation_clock.describe())

    scheduler_now = clock_from_kubeconfig(config)

    assert abs(scheduler_now() - simulation_clock.now()) < 1.0  # < 1/60 s of wall time apart
    before = scheduler_now()
    time.sleep(0.05)
    assert scheduler_now() - before >= 60 * 0.05 * 0.9


def test_a_kubeconfig_without_the_extension_means_the_wall_clock(sim, tmp_path):
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

    assert clock_from_kubeconfig(config) is time.time


def test_kubectl_accepts_the_extension(sim, tmp_path, kubectl_binary):
    import subprocess

    config = sim.server.write_kubeconfig(
        tmp_path / "kubeconfig", clock=WallClock(speed=2).describe()
    )

    result = subprocess.run(
        [kubectl_binary, "--kubeconfig", str(config), "get", "namespaces"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "default" in result.stdout
