"""The simulated cluster's Kubernetes-compatible API server.

``Cluster`` holds the operations and rules (usable in-process); ``ApiServer`` serves them over
HTTP for the ``kubernetes`` client and ``kubectl``.
"""

from simcluster.api.cluster import Cluster
from simcluster.api.errors import ApiError
from simcluster.api.server import ApiServer, kubeconfig
from simcluster.api.webhook import Webhook

__all__ = ["ApiError", "ApiServer", "Cluster", "Webhook", "kubeconfig"]
