"""A Job-like controller for the pipeline tests, creating its pods through the API."""

from __future__ import annotations

from tests.builders import body, pod
from tests.e2e.harness import Harness


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
            job_pod = pod(
                name, self.cpu, namespace="default", queue=self.queue, grace=5, priority=0
            )
            self.h.core.create_namespaced_pod("default", body(job_pod))
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
