"""The eviction subresource (``POST .../pods/{name}/eviction``) as kube-apiserver v1.32 serves
it (pkg/registry/core/pod/storage/eviction.go), PodDisruptionBudgets included.

1. A pod that is Succeeded, Failed, Pending or already being deleted (``canIgnorePDB``) is
   deleted without looking at any PDB (for a Pending pod, on the condition that it has not
   changed since it was read: its resourceVersion becomes a delete precondition).
2. Otherwise the PDBs of its namespace whose selector matches its labels are read (a null
   selector matches no pod): more than one is a 500 whose Status carries no reason ("This pod
   has more than one PodDisruptionBudget, which the eviction subresource does not support.");
   none lets the eviction through.
3. A pod that is not Ready gets through without spending the budget when the PDB's
   ``unhealthyPodEvictionPolicy`` is AlwaysAllow, or (IfHealthyBudget, the default) when the
   budget is met: currentHealthy >= desiredHealthy > 0.
4. Otherwise ``checkAndDecrement``: a PDB whose status is behind its spec is a 429 ("… is still
   being processed by the server.", retry after 10 s); no disruption allowed is a 429 with the
   cause ``DisruptionBudget``: "The disruption budget <name> needs <desired> healthy pods and
   has <current> currently"; else ``disruptionsAllowed`` goes down by one and
   ``status.disruptedPods[<pod>]`` records the time (nothing is written on a dry run).
5. The pod gets the condition DisruptionTarget=True (reason EvictionByEvictionAPI) and is
   deleted with the eviction's delete options (grace period, preconditions), gracefully.

The simulated disruption controller recomputes the namespace's PDBs first, and the whole
request holds the store's lock, so two evictions never spend the same disruption.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from simcluster.api.errors import ApiError, status_object, store_error
from simcluster.api.pods import set_condition
from simcluster.disruption import KIND, is_pod_ready, pdb_matches, set_disruption_allowed_condition
from simcluster.podutil import meta
from simcluster.store import StoreError, utc_timestamp

if TYPE_CHECKING:
    from simcluster.api.cluster import Cluster

MAX_DISRUPTED_POD_SIZE = 2000
MULTIPLE_BUDGETS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


class BareStatus(ApiError):
    """A failure the handler returns as its own ``metav1.Status`` (no reason, no details)."""

    def status(self) -> dict:
        body = status_object(self.code, self.message, "")
        body.pop("reason")
        return body


def too_many_requests(cause: str, retry_after: int = 0) -> ApiError:
    """``errors.NewTooManyRequests(VIOLATION, retry_after)`` with a DisruptionBudget cause."""
    details: dict = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(429, VIOLATION, reason="TooManyRequests", details=details)


def still_processing(name: str) -> ApiError:
    """``createTooManyRequestsError``."""
    return too_many_requests(
        f"The disruption budget {name} is still being processed by the server.", 10
    )


def forbidden(name: str, why: str) -> ApiError:
    """``errors.NewForbidden(policy.Resource("poddisruptionbudget"), name, why)``."""
    return ApiError(
        403,
        f'poddisruptionbudget.policy "{name}" is forbidden: {why}',
        details={"name": name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def evict_pod(cluster: Cluster, namespace: str, name: str, eviction: dict) -> None:
    """Evict the pod or raise the ``ApiError`` kube-apiserver would answer with."""
    options = copy.deepcopy(eviction.get("deleteOptions") or {})
    dry_run = bool(options.get("dryRun"))
    with cluster.store.locked():
        pod = cluster.get("pods", namespace, name)
        cluster.disruption.sync_namespace(namespace)
        if can_ignore_pdb(pod):
            if _should_enforce_resource_version(pod) and not _resource_version(options):
                options = _with_resource_version(options, meta(pod)["resourceVersion"])
            _add_condition_and_delete(cluster, pod, options, dry_run)
            return
        budgets = [b for b in cluster.store.list(KIND, namespace)[0] if pdb_matches(b, pod)]
        if len(budgets) > 1:
            raise BareStatus(500, MULTIPLE_BUDGETS)
        unhealthy_allowed = False
        if budgets:
            budget = budgets[0]
            unhealthy_allowed = not is_pod_ready(pod) and _unhealthy_evictable(budget)
            if not unhealthy_allowed:
                _check_and_decrement(cluster, budget, name, dry_run)
        original = options
        if unhealthy_allowed:
            options = _with_resource_version(options, meta(pod)["resourceVersion"])
        try:
            _add_condition_and_delete(cluster, pod, options, dry_run)
        except ApiError as error:
            if error.code == 409 and unhealthy_allowed and not _resource_version(original):
                raise still_processing(meta(budgets[0])["name"]) from None
            raise


def can_ignore_pdb(pod: dict) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(meta(pod).get("deletionTimestamp"))


def _should_enforce_resource_version(pod: dict) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def _unhealthy_evictable(budget: dict) -> bool:
    """An unready pod may go without spending the budget (unhealthyPodEvictionPolicy)."""
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = budget.get("status") or {}
    desired = status.get("desiredHealthy") or 0
    return (status.get("currentHealthy") or 0) >= desired > 0


def _check_and_decrement(cluster: Cluster, budget: dict, pod_name: str, dry_run: bool) -> None:
    name, namespace = meta(budget)["name"], meta(budget)["namespace"]
    status = budget.get("status") or {}
    allowed = status.get("disruptionsAllowed") or 0
    if (status.get("observedGeneration") or 0) < (meta(budget).get("generation") or 0):
        raise still_processing(name)
    if allowed < 0:
        raise forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if allowed == 0:
        raise too_many_requests(
            f"The disruption budget {name} needs {status.get('desiredHealthy') or 0} healthy "
            f"pods and has {status.get('currentHealthy') or 0} currently"
        )
    if dry_run:
        return
    now = cluster.now()

    def decrement(pdb: dict) -> None:
        pdb["status"] = status
        status["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            set_disruption_allowed_condition(status, now)
        status.setdefault("disruptedPods", {})[pod_name] = utc_timestamp(now)

    try:
        cluster.store.mutate(KIND, namespace, name, decrement)
    except StoreError as error:
        raise store_error(error, KIND, name) from None


def _add_condition_and_delete(cluster: Cluster, pod: dict, options: dict, dry_run: bool) -> None:
    """``addConditionAndDeletePod``: DisruptionTarget=True, then the delete."""
    namespace, name = meta(pod)["namespace"], meta(pod)["name"]
    if dry_run:
        _check_preconditions(cluster.get("pods", namespace, name), options)
        return
    now = cluster.now()

    def add_condition(latest: dict) -> None:
        _check_preconditions(latest, options)
        set_condition(
            latest,
            "DisruptionTarget",
            "True",
            now,
            reason="EvictionByEvictionAPI",
            message="Eviction API: evicting",
        )

    try:
        updated = cluster.store.mutate("pods", namespace, name, add_condition)
    except StoreError as error:
        raise store_error(error, "pods", name) from None
    if _resource_version(options):
        options = _with_resource_version(options, updated["metadata"]["resourceVersion"])
    cluster.delete("pods", namespace, name, options)


def _check_preconditions(latest: dict, options: dict) -> None:
    """``getLatestPod``'s checks, worded as it words them (the resource is "Pod")."""
    preconditions = options.get("preconditions") or {}
    uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
    current_uid, current_version = meta(latest).get("uid"), meta(latest).get("resourceVersion")
    if uid and uid != current_uid:
        why = (
            f"the UID in the precondition ({uid}) does not match the UID in record "
            f"({current_uid}). The object might have been deleted and then recreated"
        )
    elif version and version != current_version:
        why = (
            f"the ResourceVersion in the precondition ({version}) does not match the "
            f"ResourceVersion in record ({current_version}). The object might have been modified"
        )
    else:
        return
    name = meta(latest).get("name", "")
    raise ApiError(
        409,
        f'Operation cannot be fulfilled on Pod "{name}": {why}',
        reason="Conflict",
        details={"name": name, "kind": "Pod"},
    )


def _resource_version(options: dict) -> str:
    return (options.get("preconditions") or {}).get("resourceVersion") or ""


def _with_resource_version(options: dict, version: str) -> dict:
    options = copy.deepcopy(options)
    options.setdefault("preconditions", {})["resourceVersion"] = version
    return options
