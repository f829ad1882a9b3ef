from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import wait_until  # noqa: F401 - re-exported for tests
from tests.simcluster.api.conftest import Sim, kubectl, kubectl_binary, start_sim  # noqa: F401 - fixtures


@pytest.fixture
def sim() -> Iterator[Sim]:
    running = start_sim(watch_log_size=50)
    yield running
    running.api_client.close()
    running.server.stop()


def node(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str, *, cpu: str = "1", memory: str = "1Gi", namespace: str = "default", **extra
) -> dict:
    spec = {
        "schedulerName": "volcano",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    spec.update(extra.pop("spec", {}))
    metadata = {"name": name, "namespace": namespace, **extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def queue(name: str, **spec) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, **spec},
    }
