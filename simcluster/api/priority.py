"""PriorityClasses as kube-apiserver handles them: its Priority admission plugin sets a new pod's
``spec.priority`` (and ``preemptionPolicy``) from its ``priorityClassName`` — or from the
global default class when it names none — and refuses a name that does not exist; the two
system classes exist from the start; a PriorityClass is validated on create.
"""

from __future__ import annotations

from simcluster.api.errors import ApiError, invalid, invalid_field
from simcluster.store import NotFound, Store

SYSTEM_CLASSES = {  # kube-apiserver's scheduling.SystemPriorityClasses()
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
HIGHEST_USER_PRIORITY = 1_000_000_000
POLICIES = ("PreemptLowerPriority", "Never")


def system_classes() -> list[dict]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "Used for system critical pods that must not be moved from their "
            "current node.",
        }
        for name, value in SYSTEM_CLASSES.items()
    ]


def validate_priority_class(obj: dict, store: Store) -> None:
    name = (obj.get("metadata") or {}).get("name", "")
    causes = []
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        causes.append(invalid_field("value", value, "must be an integer"))
    elif value > HIGHEST_USER_PRIORITY and name not in SYSTEM_CLASSES:
        causes.append(
            invalid_field("value", value, f"must be no greater than {HIGHEST_USER_PRIORITY}")
        )
    default = obj.setdefault("globalDefault", False)
    if not isinstance(default, bool):
        causes.append(invalid_field("globalDefault", default, "must be true or false"))
    policy = obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if policy not in POLICIES:
        causes.append(invalid_field("preemptionPolicy", policy, f"supported values: {POLICIES}"))
    if default is True:
        other = global_default(store)
        if other is not None and other["metadata"]["name"] != name:
            causes.append(
                invalid_field(
                    "globalDefault", True,
                    f"PriorityClass {other['metadata']['name']} is already marked as default. "
                    "Only one default can exist",
                )
            )  # fmt: skip
    if causes:
        raise invalid("PriorityClass", name, causes)


def global_default(store: Store) -> dict | None:
    items, _ = store.list("priorityclasses")
    return next((pc for pc in items if pc.get("globalDefault") is True), None)


def admit_pod_priority(pod: dict, store: Store) -> None:
    """The Priority admission plugin: a pod's priority comes from its class, never its spec."""
    spec = pod.setdefault("spec", {})
    name = spec.get("priorityClassName") or ""
    if name:
        try:
            pc = store.get("priorityclasses", "", name)
        except NotFound:
            raise ApiError(
                403, f'pods "{_pod_name(pod)}" is forbidden: no PriorityClass with name '
                f"{name} was found",
            ) from None  # fmt: skip
    else:
        pc = global_default(store)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = pc["value"] if pc is not None else 0
    if spec.get("priority") is not None and spec["priority"] != value:
        raise ApiError(
            403, f'pods "{_pod_name(pod)}" is forbidden: the integer value of priority '
            f"({spec['priority']}) must not be provided in pod spec; priority admission "
            f"controller computed {value} from the given PriorityClass name",
        )  # fmt: skip
    spec["priority"] = value
    policy = pc.get("preemptionPolicy", "PreemptLowerPriority") if pc else "PreemptLowerPriority"
    spec.setdefault("preemptionPolicy", policy)


def _pod_name(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return meta.get("name") or meta.get("generateName") or ""
