"""The one road to the cluster from the Django side: the official ``kubernetes`` client.

``SLUICE_KUBECONFIG`` names a kubeconfig (the simulated cluster writes ``.run/kubeconfig``);
without it, the in-cluster service account is used when present.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable

from django.conf import settings
from kubernetes import client, config

from scheduler.kube.config import clock_from_kubeconfig


@functools.cache
def api_client() -> client.ApiClient:
    kubeconfig = settings.SLUICE_KUBECONFIG
    if kubeconfig and os.path.exists(kubeconfig):
        return config.new_client_from_config(config_file=str(kubeconfig))
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
        return client.ApiClient()
    raise RuntimeError(
        f"no cluster configured: SLUICE_KUBECONFIG={kubeconfig!r} does not exist and "
        "this is not a pod in a cluster"
    )


def cluster_clock() -> Callable[[], float]:
    """Simulated time when the kubeconfig is the simulated cluster's, else the wall clock."""
    kubeconfig = settings.SLUICE_KUBECONFIG
    if kubeconfig and os.path.exists(kubeconfig):
        return clock_from_kubeconfig(kubeconfig)
    return time.time


def namespace_labels(name: str) -> dict[str, str]:
    """The labels of namespace ``name``, read fresh (a toggle must apply to the next pod)."""
    core = client.CoreV1Api(api_client())
    namespace = core.read_namespace(name, _request_timeout=settings.SLUICE_KUBE_TIMEOUT)
    return namespace.metadata.labels or {}
