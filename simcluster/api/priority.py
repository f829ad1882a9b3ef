"""PriorityClasses as kube-apiserver v1.32 handles them.

- Decoding and v1 defaults: a field its Go type cannot hold is a 400; ``value`` is 0,
  ``preemptionPolicy`` PreemptLowerPriority when absent; ``globalDefault: false`` is omitted.
- ``ValidatePriorityClass`` on create (422): names with the ``system-`` prefix are the system
  classes' only, a user class's value is at most HighestUserDefinablePriority, the policy is one
  of two. ``ValidatePriorityClassUpdate`` on update (422): value and preemptionPolicy are
  immutable (and nothing else is checked again).
- The Priority admission plugin (403): one ``globalDefault`` class only, on create and update;
  a new pod's ``spec.priority`` and ``preemptionPolicy`` come from its ``priorityClassName`` (or
  the global default class when it names none) and may not contradict it; a class that does not
  exist is refused.
- The REST storage (403): the two system classes, which exist from the start, cannot be
  deleted.
"""

from __future__ import annotations

from simcluster.api.errors import (
    bad_request,
    forbidden,
    forbidden_field,
    invalid,
    invalid_field,
    required_field,
    unsupported_field,
)
from simcluster.store import NotFound, Store

GROUP = "scheduling.k8s.io"
KIND = "PriorityClass"
SYSTEM_PREFIX = "system-"  # scheduling.SystemPriorityClassPrefix
SYSTEM_CLASSES = {  # kube-apiserver's scheduling.SystemPriorityClasses()
    "system-node-critical": (
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
}
HIGHEST_USER_PRIORITY = 1_000_000_000
POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_POLICY = "PreemptLowerPriority"
# The v1 PriorityClass fields kube-apiserver decodes into Go types, and those types' names.
_GO_TYPES = {
    "value": "int32",
    "globalDefault": "bool",
    "description": "string",
    "preemptionPolicy": "v1.PreemptionPolicy",
}


def system_classes() -> list[dict]:
    return [
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": KIND,
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": DEFAULT_POLICY,
            "description": description,
        }
        for name, (value, description) in SYSTEM_CLASSES.items()
    ]


def decode_priority_class(obj: dict) -> None:
    """The body as kube-apiserver's decoder and v1 defaults leave it; 400 for a field whose Go
    type cannot hold the value sent."""
    for field, go_type in _GO_TYPES.items():
        value = obj.get(field)
        if value is None or _fits(go_type, value):
            continue
        raise bad_request(
            f'{KIND} in version "v1" cannot be handled as a {KIND}: json: cannot unmarshal '
            f"{_json_value(go_type, value)} into Go struct field {KIND}.{field} of type {go_type}"
        )
    if obj.get("value") is None:
        obj["value"] = 0
    if obj.get("globalDefault") is not True:
        obj.pop("globalDefault", None)  # json:"globalDefault,omitempty"
    if not obj.get("description"):
        obj.pop("description", None)  # json:"description,omitempty"
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = DEFAULT_POLICY  # SetDefaults_PriorityClass


def _fits(go_type: str, value: object) -> bool:
    if go_type == "int32":
        return isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31
    if go_type == "bool":
        return isinstance(value, bool)
    return isinstance(value, str)


def _json_value(go_type: str, value: object) -> str:
    """encoding/json's UnmarshalTypeError.Value: what kind of JSON value it could not store."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}" if go_type == "int32" else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def validate_priority_class(obj: dict) -> None:
    """``ValidatePriorityClass`` (pkg/apis/scheduling/validation), run on create only."""
    name = obj["metadata"].get("name") or ""
    causes = []
    if name.startswith(SYSTEM_PREFIX):
        error = _system_class_error(name, obj["value"], obj.get("globalDefault") is True)
        if error:
            causes.append(
                forbidden_field(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for "
                    f"system use only. error: {error}",
                )
            )
    elif obj["value"] > HIGHEST_USER_PRIORITY:
        causes.append(
            forbidden_field(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    policy = obj["preemptionPolicy"]
    if policy == "":
        causes.append(required_field("preemptionPolicy"))
    elif policy not in POLICIES:
        causes.append(unsupported_field("preemptionPolicy", policy, POLICIES))
    if causes:
        raise invalid(KIND, name, causes, GROUP)


def _system_class_error(name: str, value: int, global_default: bool) -> str:
    """``IsKnownSystemPriorityClass``: empty when the class is exactly a system class."""
    if name not in SYSTEM_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_CLASSES[name][0]:
        return f"value of {name} PriorityClass must be {SYSTEM_CLASSES[name][0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class_update(old: dict, new: dict) -> None:
    """``ValidatePriorityClassUpdate``: value and preemptionPolicy may not change. (The
    strategy runs nothing else on an update: no prefix, highest-value or policy check.)"""
    causes = []
    if new["value"] != old.get("value"):
        causes.append(forbidden_field("value", "may not be changed in an update."))
    if new["preemptionPolicy"] != old.get("preemptionPolicy", DEFAULT_POLICY):
        causes.append(
            invalid_field("preemptionPolicy", new["preemptionPolicy"], "field is immutable")
        )
    if causes:
        raise invalid(KIND, new["metadata"].get("name") or "", causes, GROUP)


def admit_priority_class(obj: dict, store: Store, *, update: bool) -> None:
    """The Priority admission plugin's ``validatePriorityClass``, on create and update: a class
    may become the global default only while no other one is."""
    if obj.get("globalDefault") is not True:
        return
    name = obj["metadata"].get("name") or ""
    other = global_default(store)
    if other is not None and (not update or other["metadata"]["name"] != name):
        raise forbidden(
            "priorityclasses",
            name,
            f"PriorityClass {other['metadata']['name']} is already marked as default. "
            "Only one default can exist",
        )


def check_delete(name: str) -> None:
    """The PriorityClass REST storage's ``Delete``: never one of the system classes."""
    if name in SYSTEM_CLASSES:
        raise forbidden(
            "priorityclasses", name, "this is a system priority class and cannot be deleted"
        )


def global_default(store: Store) -> dict | None:
    """The global default class; of several (a race), the one of lowest value, as the plugin."""
    items, _ = store.list("priorityclasses")
    defaults = [pc for pc in items if pc.get("globalDefault") is True]
    return min(defaults, key=lambda pc: pc.get("value", 0), default=None)


def admit_pod_priority(pod: dict, store: Store) -> None:
    """The Priority admission plugin on a pod's create: its priority and preemption policy
    come from its class, never its spec."""
    spec = pod.setdefault("spec", {})
    name = spec.get("priorityClassName") or ""
    pc: dict | None
    if name:
        try:
            pc = store.get("priorityclasses", "", name)
        except NotFound:
            raise forbidden(
                "pods", _pod_name(pod), f"no PriorityClass with name {name} was found"
            ) from None
    else:
        pc = global_default(store)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = pc["value"] if pc is not None else 0
    if spec.get("priority") is not None and spec["priority"] != value:
        raise forbidden(
            "pods", _pod_name(pod), f"the integer value of priority ({spec['priority']}) must "
            f"not be provided in pod spec; priority admission controller computed {value} "
            "from the given PriorityClass name",
        )  # fmt: skip
    spec["priority"] = value
    # With no class at all, the plugin computes PreemptLowerPriority (getDefaultPriority).
    policy = pc.get("preemptionPolicy") if pc is not None else DEFAULT_POLICY
    if policy is not None:
        sent = spec.get("preemptionPolicy")
        if sent is not None and sent != policy:
            raise forbidden(
                "pods", _pod_name(pod), f"the string value of PreemptionPolicy ({sent}) must "
                f"not be provided in pod spec; priority admission controller computed {policy} "
                "from the given PriorityClass name",
            )  # fmt: skip
        spec["preemptionPolicy"] = policy


def _pod_name(pod: dict) -> str:
    meta = pod.get("metadata") or {}
    return meta.get("name") or meta.get("generateName") or ""
