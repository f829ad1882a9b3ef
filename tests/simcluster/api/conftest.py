"""A simulated API server on a free loopback port, and clients that talk to it."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from simcluster.api import ApiServer, Cluster, Webhook
from simcluster.store import Store
from tests.builders import body, namespace
from tests.conftest import require_binary


@dataclass
class Sim:
    store: Store
    cluster: Cluster
    server: ApiServer
    api_client: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)


def start_sim(*, webhook: Webhook | None = None, watch_log_size: int = 20_000) -> Sim:
    store = Store(time.time, watch_log_size=watch_log_size)
    cluster = Cluster(store, time.time, webhook)
    cluster.create_object("namespaces", body(namespace("default")))
    server = ApiServer(cluster, port=0).start()
    configuration = client.Configuration(host=server.url)
    return Sim(store, cluster, server, client.ApiClient(configuration))


@pytest.fixture
def sim() -> Iterator[Sim]:
    running = start_sim()
    yield running
    running.api_client.close()
    running.server.stop()


@pytest.fixture
def kubectl_binary() -> str:
    return require_binary("kubectl", fallback="/usr/bin/kubectl")


@pytest.fixture
def kubectl(
    sim: Sim, tmp_path: Path, kubectl_binary: str
) -> Callable[..., subprocess.CompletedProcess]:
    binary = kubectl_binary
    config = sim.server.write_kubeconfig(tmp_path / "kubeconfig")

    def run(
        *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [binary, "--kubeconfig", str(config), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run
