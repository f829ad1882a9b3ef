"""`manage.py schedule --once` against the simulated cluster, checked with kubectl."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.scheduler.conftest import sim  # noqa: F401 - the simulated cluster fixture
from tests.scheduler.test_service import bound_nodes, create_cluster
from tests.simcluster.api.conftest import kubectl, kubectl_binary  # noqa: F401 - fixtures


def schedule(*args: str) -> str:
    out = io.StringIO()
    call_command("schedule", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.kubectl
def test_schedule_once_binds_the_pods_and_kubectl_shows_their_nodes(sim, tmp_path, kubectl):  # noqa: F811
    create_cluster(sim, pods=3)
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

    output = schedule("--kubeconfig", str(config), "--once", "--mode", "act")

    nodes = bound_nodes(sim)
    assert all(nodes.values()), nodes
    assert output.startswith("cycle act:")
    assert "default/job-0: allocated (waiting -> binding) on n" in output
    table = kubectl("get", "pods", "-o", "wide").stdout
    for name, node in nodes.items():
        row = next(line.split() for line in table.splitlines() if line.startswith(name))
        assert node in row


def test_observe_is_the_default_and_binds_nothing(sim, tmp_path):  # noqa: F811
    create_cluster(sim, pods=1)
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

    output = schedule("--kubeconfig", str(config), "--once")

    assert output.startswith("cycle observe:")
    assert not any(bound_nodes(sim).values())


def test_a_missing_kubeconfig_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="--kubeconfig .*missing"):
        schedule("--kubeconfig", str(tmp_path / "missing"), "--once")


@pytest.mark.parametrize(("flag", "children"), [((), 1), (("--no-bind-process",), 0)])
def test_the_binds_leave_from_a_bind_process_unless_told_otherwise(
    sim,  # noqa: F811
    tmp_path,
    monkeypatch,
    flag,
    children,
):
    """SLUICE_BIND_PROCESS (default on) and ``--bind-process/--no-bind-process``: the binds
    leave from a child process (scheduler.kube.bind_process), or from the command's own."""
    from scheduler import service
    from scheduler.kube.bind_process import BindProcess

    started: list[BindProcess] = []

    class Counted(BindProcess):
        def start(self) -> BindProcess:
            started.append(self)
            return super().start()

    monkeypatch.setattr(service, "BindProcess", Counted)
    create_cluster(sim, pods=2)
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

    schedule("--kubeconfig", str(config), "--once", "--mode", "act", *flag)

    assert all(bound_nodes(sim).values())
    assert len(started) == children
    assert all(binder.started == 1 for binder in started)  # each child started once, and ended
    assert all(binder.pid is None for binder in started)
