"""The leader's fence: every write request the scheduler sends asks first whether this process
still leads (``leading()``, :meth:`scheduler.kube.leader.LeaderElector.is_leader`); reads pass.
A write refused raises :class:`NotLeader`, which the callers treat as any failed write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from scheduler.kube.client import KubeClusterClient


class NotLeader(RuntimeError):
    """A write refused because this process no longer holds the Lease."""


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _FencedRest:
    """The REST client of an ApiClient whose every write (POST, PUT, PATCH, DELETE) asks
    ``leading()`` first; reads (GET, watches) pass."""

    def __init__(self, inner: Any, leading: Callable[[], bool], counter: list[int]) -> None:
        self._inner = inner
        self._leading = leading
        self._counter = counter

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if method.upper() in WRITE_METHODS and not self._leading():
            self._counter[0] += 1
            raise NotLeader(f"{method} {url}: not the leader (lease lost); nothing written")
        return self._inner.request(method, url, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def fenced_api_client(
    api: client.ApiClient, leading: Callable[[], bool]
) -> tuple[client.ApiClient, list[int]]:
    """An ApiClient to the same cluster through which nothing is written unless ``leading()``
    (checked before each write request, the moment it would leave the process): every write of
    the scheduler — binds, evictions, gate removals, conditions, nominatedNodeName, PodGroup
    status, events, from the cycle or from its write pools — goes through one. A write refused
    raises :class:`NotLeader`, which the callers treat as any failed write (the cycle records
    it, the cache resyncs the pod). Also returns the count of refused writes (one cell)."""
    fenced = client.ApiClient(api.configuration)
    fenced.default_headers.update(api.default_headers)
    refused = [0]
    fenced.rest_client = _FencedRest(fenced.rest_client, leading, refused)  # type: ignore[assignment]
    return fenced, refused


def fence_cluster_client(cluster: KubeClusterClient, leading: Callable[[], bool]) -> list[int]:
    """Route every request of ``cluster`` through :func:`fenced_api_client` (in place: whoever
    holds it — the cycle, the cache's write pools, the gate pool — is fenced), and the binds'
    own connections (``cluster.direct``) the same way. Returns the count of refused writes
    (one cell)."""
    fenced, refused = fenced_api_client(cluster.api, leading)
    cluster.api = fenced
    cluster.core = client.CoreV1Api(fenced)
    cluster.custom = client.CustomObjectsApi(fenced)
    if cluster.direct is not None:
        cluster.direct = _FencedRest(cluster.direct, leading, refused)
    return refused
