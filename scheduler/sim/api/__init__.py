"""The simulated cluster's Kubernetes-compatible API server.

``Cluster`` holds the operations and rules (usable in-process); ``ApiServer`` serves them over
HTTP for the ``kubernetes`` client and ``kubectl``.
"""

from scheduler.sim.api.cluster import Cluster
from scheduler.sim.api.errors import ApiError
from scheduler.sim.api.server import ApiServer, kubeconfig
from scheduler.sim.api.webhook import Webhook

__all__ = ["ApiError", "ApiServer", "Cluster", "Webhook", "kubeconfig"]
