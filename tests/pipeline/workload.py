"""Pods and a Job-like controller for the pipeline tests, created through the API."""

from __future__ import annotations

from tests.gates.harness import Harness

QUEUE_NAME = "scheduling.volcano.sh/queue-name"


def make_pod(name: str, queue: str, cpu: str, *, grace: int = 5, priority: int = 0) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {QUEUE_NAME: queue}},
        "spec": {
            "schedulerName": "volcano",
            "priority": priority,
            "terminationGracePeriodSeconds": grace,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                }
            ],
        },
    }


class Recreator:
    """What a batch Job controller does for evicted pods: replace each pod that is gone with
    a new one of the same shape (the evicted work must still run)."""

    def __init__(self, h: Harness, prefix: str, queue: str, cpu: str) -> None:
        self.h, self.prefix, self.queue, self.cpu = h, prefix, queue, cpu
        self.live: set[str] = set()
        self.created = 0

    def create(self, count: int) -> None:
        for _ in range(count):
            name = f"{self.prefix}-{self.created}"
            self.created += 1
            self.h.core.create_namespaced_pod("default", make_pod(name, self.queue, self.cpu))
            self.live.add(name)

    def reconcile(self) -> None:
        present = {
            p["metadata"]["name"]
            for p in self.h.store.list("pods", "default")[0]
            if p["metadata"]["name"].startswith(f"{self.prefix}-")
        }
        gone = self.live - present
        self.live -= gone
        self.create(len(gone))
