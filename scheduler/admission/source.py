"""Where the capacity snapshot comes from: the cluster's API.

``fetch_snapshot`` lists nodes and pods through the official ``kubernetes`` client (the one
road to every cluster) and builds the resource monitor's CapacitySnapshot. ``PeriodicSnapshot`` is the in-process
resource monitor: it refreshes every ``refresh_s`` seconds of the injected clock, and on
demand; the dashboard's Celery task does the same and keeps the result in Redis.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from scheduler.admission.monitor import CapacitySnapshot, build_snapshot

DEFAULT_REFRESH_S = 60.0


def as_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def fetch_snapshot(api: client.ApiClient, now: float, *, timeout: float = 30.0) -> CapacitySnapshot:
    """List every node and pod (raw JSON: no model objects) and build the snapshot at ``now``."""
    core = client.CoreV1Api(api)
    nodes = _items(core.list_node(_preload_content=False, _request_timeout=timeout))
    pods = _items(
        core.list_pod_for_all_namespaces(
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            _preload_content=False,
            _request_timeout=timeout,
        )
    )
    return build_snapshot(nodes, pods, as_datetime(now))


def _items(response: Any) -> list[dict[str, Any]]:
    return json.loads(response.data).get("items") or []


class PeriodicSnapshot:
    """The latest snapshot, taken again when ``refresh_s`` has passed or when asked to."""

    def __init__(
        self,
        take: Callable[[float], CapacitySnapshot],
        clock: Callable[[], float],
        *,
        refresh_s: float = DEFAULT_REFRESH_S,
    ) -> None:
        self.take, self.clock, self.refresh_s = take, clock, refresh_s
        self._snapshot: CapacitySnapshot | None = None
        self._taken_at = float("-inf")

    def __call__(self) -> CapacitySnapshot | None:
        if self.clock() - self._taken_at >= self.refresh_s:
            self.refresh()
        return self._snapshot

    def refresh(self) -> CapacitySnapshot:
        self._taken_at = self.clock()
        self._snapshot = self.take(self._taken_at)
        return self._snapshot
