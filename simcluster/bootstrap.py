"""What kube-apiserver creates when it starts: the ``kube-system`` namespace.

Its UID is the cluster's identity (``scheduler.cache.SYSTEM_NAMESPACE``): the scheduler reports
it with every cycle, so the dashboard tells one cluster's pods from another's. Created once,
with a fresh UID, it is kept in ``--state`` with every other object: a restarted simulated
cluster that loads its state is the same cluster; one started afresh is a new one.
"""

from __future__ import annotations

from simcluster.store import NotFound, Store

SYSTEM_NAMESPACE = "kube-system"


def ensure_system_namespace(store: Store) -> str:
    """Create ``kube-system`` unless the store has it (a loaded state may); its UID."""
    try:
        return store.get("namespaces", "", SYSTEM_NAMESPACE)["metadata"]["uid"]
    except NotFound:
        namespace = {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": SYSTEM_NAMESPACE,
                                  "labels": {"kubernetes.io/metadata.name": SYSTEM_NAMESPACE}}}  # fmt: skip
        return store.create("namespaces", namespace)["metadata"]["uid"]
