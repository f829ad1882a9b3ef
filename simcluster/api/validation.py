"""Kubernetes' rules for the objects the simulated cluster stores.

Each check raises an ``ApiError`` worded like kube-apiserver's, so a client sees here exactly
what a real cluster would tell it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator

from scheduler.api.quantity import QuantityError, kube_syntax_error, quantity_value
from simcluster.api.errors import (
    ApiError,
    bad_request,
    forbidden_field,
    invalid,
    invalid_field,
    required_field,
    too_long_field,
    unsupported_field,
)
from simcluster.api.resources import Resource

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*"
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{DNS1123_LABEL}')"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{DNS1123_SUBDOMAIN}')"
)
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    f"end with an alphanumeric character (regex used for validation is '{QUALIFIED_NAME}')"
)
# Pod spec fields an update may change (kube-apiserver's ValidatePodUpdate, simplified).
MUTABLE_POD_SPEC = ("schedulingGates", "activeDeadlineSeconds", "tolerations")


def validate_name(resource: Resource, obj: dict) -> None:
    name = obj["metadata"].get("name") or ""
    if not name:
        raise invalid(resource.kind, name, [required_field("metadata.name")], resource.group)
    if resource.plural == "namespaces":
        pattern, message, limit = DNS1123_LABEL, LABEL_MESSAGE, 63
    else:
        pattern, message, limit = DNS1123_SUBDOMAIN, SUBDOMAIN_MESSAGE, 253
    if len(name) > limit:
        message = f"must be no more than {limit} characters"
    elif re.fullmatch(pattern, name):
        return
    cause = invalid_field("metadata.name", name, message)
    raise invalid(resource.kind, name, [cause], resource.group)


CONFIG_KEY = r"[-._a-zA-Z0-9]+"
MAX_CONFIG_MAP_BYTES = 1 << 20  # core.MaxSecretSize, also a ConfigMap's limit


def validate_config_map(obj: dict) -> None:
    """kube-apiserver's ValidateConfigMap: data keys are config keys, values are strings, no key
    is in both data and binaryData, and all the values hold at most 1 MiB together."""
    name = obj["metadata"].get("name") or ""
    errors = []
    total = 0
    binary = obj.get("binaryData")
    binary_keys = set(binary) if isinstance(binary, dict) else set()
    for section in ("data", "binaryData"):
        entries = obj.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            errors.append(invalid_field(section, entries, "must be a map of string to string"))
            continue
        for key, value in entries.items():
            if len(key) > 253 or not re.fullmatch(CONFIG_KEY, key):
                message = (
                    "a valid config key must consist of alphanumeric characters, '-', '_' or "
                    f"'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                    f"validation is '{CONFIG_KEY}')"
                )
                errors.append(invalid_field(f"{section}[{key}]", key, message))
            elif not isinstance(value, str):
                errors.append(invalid_field(f"{section}[{key}]", value, "must be a string"))
            if section == "data" and key in binary_keys:
                message = "duplicate of key present in binaryData"
                errors.append(invalid_field(f"data[{key}]", key, message))
            if isinstance(value, str):
                raw = value.encode("utf-8", "surrogatepass")
                total += len(go_base64_decode(raw) or b"") if section == "binaryData" else len(raw)
    if total > MAX_CONFIG_MAP_BYTES:
        # field.TooLong(field.NewPath(""), ...): the whole object, printed as "[]".
        errors.append(too_long_field("[]", MAX_CONFIG_MAP_BYTES))
    if errors:
        raise invalid("ConfigMap", name, errors)


def validate_binary_data_decode(resource: Resource, obj: dict) -> None:
    """400, as kube-apiserver's JSON decoder refuses a ConfigMap's binaryData value (a []byte)
    that is not standard, padded base64."""
    if resource.plural != "configmaps" or not isinstance(obj.get("binaryData"), dict):
        return
    for value in obj["binaryData"].values():
        if not isinstance(value, str):
            continue
        raw = value.encode("utf-8", "surrogatepass")
        if go_base64_decode(raw) is None:
            offset = go_base64_error(raw)
            raise bad_request(
                f'{resource.kind} in version "{resource.version}" cannot be handled as a '
                f"{resource.kind}: illegal base64 data at input byte {offset}"
            )


_BASE64_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")


# What Go's base64.StdEncoding accepts once CR and LF (which it skips) are taken out.
_GO_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def go_base64_decode(src: bytes) -> bytes | None:
    """What Go's base64.StdEncoding decodes ``src`` to, None where it refuses it."""
    stripped = src.replace(b"\r", b"").replace(b"\n", b"")
    return base64.b64decode(stripped) if _GO_BASE64.fullmatch(stripped) else None


def go_base64_error(src: bytes) -> int | None:
    """The input byte at which Go's base64.StdEncoding.Decode stops (its CorruptInputError),
    or None when it decodes: decodeQuantum's rules for padding, newlines and trailing bytes."""
    si, end = 0, len(src)
    while si < end:
        j = 0
        while j < 4:
            if si == end:
                return None if j == 0 else si - j
            c = src[si]
            si += 1
            if c in _BASE64_ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != ord("=") or j < 2:
                return si - 1
            if j == 2:  # "==" expected, the first one read
                while si < end and src[si] in _NEWLINES:
                    si += 1
                if si == end:
                    return end
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < end and src[si] in _NEWLINES:
                si += 1
            return si if si < end else None
    return None


def qualified_name_error(key: str) -> str:
    """Empty when ``key`` is a valid qualified name (``prefix/name``), else why not."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not re.fullmatch(DNS1123_SUBDOMAIN, prefix)):
        return f"prefix part {SUBDOMAIN_MESSAGE}"
    if not name or len(name) > 63 or not re.fullmatch(QUALIFIED_NAME, name):
        return QUALIFIED_MESSAGE if name else "name part must be non-empty"
    return ""


def validate_labels(resource: Resource, obj: dict) -> None:
    """apimachinery ValidateObjectMeta's ValidateLabels and ValidateAnnotations: label keys
    are qualified names, values empty or 63 characters of the same alphabet; annotation keys
    are qualified names (lower-cased first)."""
    kind, group = resource.kind, resource.group
    name = obj["metadata"].get("name") or ""
    labels = obj["metadata"].get("labels") or {}
    if not isinstance(labels, dict):
        cause = invalid_field("metadata.labels", labels, "must be a map")
        raise invalid(kind, name, [cause], group)
    causes = label_errors("metadata.labels", labels)
    annotations = obj["metadata"].get("annotations") or {}
    for key in annotations if isinstance(annotations, dict) else {}:
        error = qualified_name_error(str(key).lower())
        if error:
            causes.append(invalid_field("metadata.annotations", key, error))
    if causes:
        raise invalid(kind, name, causes, group)


def label_errors(path: str, labels: dict) -> list[tuple[str, str, str]]:
    """ValidateLabels over ``labels``, each error at ``path`` (metadata.labels,
    spec.nodeSelector)."""
    causes = []
    for key, value in labels.items():
        error = qualified_name_error(str(key))
        if error:
            causes.append(invalid_field(path, key, error))
        elif (
            not isinstance(value, str)
            or len(value) > 63
            or (value and not re.fullmatch(QUALIFIED_NAME, value))
        ):
            message = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'"
            causes.append(invalid_field(path, value, message))
    return causes


# --- resource quantities ------------------------------------------------------------------
#
# kube-apiserver decodes a Pod or a Node into Go structs before admission: a quantity that
# resource.ParseQuantity refuses ("abc", "1K") fails the request with 400 Bad Request. A quantity
# that parses goes on to validation, which refuses a negative request, limit or overhead with
# 422 Invalid ("-1Gi"). Neither sets an upper bound: "1e400" and "99999999999999999999999" are
# stored as sent. Custom resources are checked against their CRD's schema instead (Volcano's
# pattern for a Quantity field refuses "abc" and lets "-1Gi" in): see ``structural``.


def validate_quantities_decode(resource: Resource, obj: dict) -> None:
    """400, worded as kube-apiserver's decoder: a Pod or Node quantity it cannot parse."""
    for _, value in _core_quantities(resource.plural, obj):
        error = kube_syntax_error(value)
        if error:
            raise bad_request(
                f'{resource.kind} in version "{resource.version}" cannot be handled as a '
                f"{resource.kind}: {error}"
            )


def _core_quantities(plural: str, obj: dict) -> Iterator[tuple[str, object]]:
    """(field path as kube-apiserver prints it, value) of every quantity Sluice's Pods and
    Nodes carry: container requests and limits, the pod's overhead, a node's capacity."""
    if plural == "pods":
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        for kind in ("initContainers", "containers", "ephemeralContainers"):
            containers = spec.get(kind)
            for i, container in enumerate(containers if isinstance(containers, list) else []):
                resources = container.get("resources") if isinstance(container, dict) else None
                for section in ("requests", "limits"):
                    path = f"spec.{kind}[{i}].resources.{section}"
                    yield from _map_items(path, (resources or {}).get(section))
        yield from _map_items("spec.overhead", spec.get("overhead"))
    elif plural == "nodes":
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        for section in ("capacity", "allocatable"):
            yield from _map_items(f"status.{section}", status.get(section))


def _map_items(path: str, values: object) -> Iterator[tuple[str, object]]:
    if isinstance(values, dict):
        for name, value in values.items():
            yield f"{path}[{name}]", value


def _negative_quantities(pod: dict) -> list[tuple[str, str, str]]:
    """kube-apiserver's ValidateNonnegativeQuantity over a pod's requests, limits, overhead."""
    causes = []
    for field, value in _core_quantities("pods", pod):
        try:
            negative = value is not None and quantity_value(value, obj="", field=field) < 0
        except QuantityError:
            continue  # refused at decoding already
        if negative:
            causes.append(invalid_field(field, value, "must be greater than or equal to 0"))
    return causes


def validate_pod_create(pod: dict) -> None:
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    causes = _negative_quantities(pod)
    if not spec.get("containers"):
        causes.append(required_field("spec.containers"))
    causes.extend(_container_name_errors(spec))
    if spec.get("schedulingGates") and spec.get("nodeName"):
        causes.append(
            forbidden_field(
                "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
            )
        )
    causes.extend(_gate_errors(spec.get("schedulingGates") or []))
    causes.extend(_pod_spec_errors(spec))
    if causes:
        raise invalid("Pod", name, causes)


RESTART_POLICIES = ("Always", "OnFailure", "Never")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _pod_spec_errors(spec: dict) -> list[tuple[str, str, str]]:
    """More of pkg/apis/core/validation ValidatePodSpec (Kubernetes v1.32): every container's
    image (validateContainers, validateInitContainers), its requests against its limits
    (ValidateResourceRequirements), spec.restartPolicy (validateRestartPolicy), the
    tolerations' operators and effects (ValidateTolerations) and spec.nodeSelector as labels."""
    causes: list[tuple[str, str, str]] = []
    for kind in ("initContainers", "containers"):
        containers = spec.get(kind)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, dict):
                continue
            if not container.get("image"):
                causes.append(required_field(f"spec.{kind}[{i}].image"))
            causes.extend(_request_limit_errors(f"spec.{kind}[{i}].resources", container))
    policy = spec.get("restartPolicy")  # an empty one is defaulted to Always before this
    if policy and policy not in RESTART_POLICIES:
        causes.append(unsupported_field("spec.restartPolicy", policy, RESTART_POLICIES))
    tolerations = spec.get("tolerations")
    for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
        if not isinstance(toleration, dict):
            continue
        operator, effect = toleration.get("operator"), toleration.get("effect")
        if operator and operator not in TOLERATION_OPERATORS:
            causes.append(
                unsupported_field(f"spec.tolerations[{i}].operator", operator, TOLERATION_OPERATORS)
            )
        if effect and effect not in TAINT_EFFECTS:
            causes.append(unsupported_field(f"spec.tolerations[{i}].effect", effect, TAINT_EFFECTS))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        causes.extend(label_errors("spec.nodeSelector", selector))
    return causes


def _request_limit_errors(path: str, container: dict) -> list[tuple[str, str, str]]:
    """ValidateResourceRequirements: a request above its limit is refused; a resource that
    may not be overcommitted (an extended resource such as nvidia.com/gpu, hugepages-*) must
    request exactly its limit (v1helper.IsOvercommitAllowed)."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return []
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return []
    causes = []
    for resource, wanted in requests.items():
        if resource not in limits:
            continue
        try:
            request = quantity_value(wanted, obj="", field=resource)
            limit = quantity_value(limits[resource], obj="", field=resource)
        except QuantityError:
            continue  # refused at decoding already
        if request != limit and not _overcommit_allowed(str(resource)):
            message = f"must be equal to {resource} limit of {limits[resource]}"
            causes.append(invalid_field(f"{path}.requests", wanted, message))
        elif request > limit:
            message = f"must be less than or equal to {resource} limit of {limits[resource]}"
            causes.append(invalid_field(f"{path}.requests", wanted, message))
    return causes


def _overcommit_allowed(resource: str) -> bool:
    """v1helper.IsOvercommitAllowed: a native resource (no domain, or a kubernetes.io one)
    that is not hugepages."""
    domain, _, _ = resource.rpartition("/")
    native = not domain or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return native and not resource.startswith("hugepages-")


def _container_name_errors(spec: dict) -> list[tuple[str, str, str]]:
    """kube-apiserver's validateContainers, then validateInitContainers: every name a DNS label,
    unique across the pod's containers and init containers."""
    causes, seen = [], set()
    for kind in ("containers", "initContainers"):
        containers = spec.get(kind)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            field = f"spec.{kind}[{i}].name"
            name = container.get("name") if isinstance(container, dict) else None
            if not name:
                causes.append(required_field(field))
            elif len(name) > 63:
                causes.append(invalid_field(field, name, "must be no more than 63 characters"))
            elif not re.fullmatch(DNS1123_LABEL, name):
                causes.append(invalid_field(field, name, LABEL_MESSAGE))
            elif name in seen:
                causes.append((field, "FieldValueDuplicate", f'Duplicate value: "{name}"'))
            seen.add(name)
    return causes


def _gate_errors(gates: list) -> list[tuple[str, str, str]]:
    causes, seen = [], set()
    for index, gate in enumerate(gates):
        field = f"spec.schedulingGates[{index}].name"
        name = gate.get("name") if isinstance(gate, dict) else None
        if not name:
            causes.append(required_field(field))
        elif qualified_name_error(name):
            causes.append(invalid_field(field, name, qualified_name_error(name)))
        elif name in seen:
            causes.append((field, "FieldValueDuplicate", f'Duplicate value: "{name}"'))
        seen.add(name)
    return causes


def validate_pod_update(old: dict, new: dict) -> None:
    """Gates may only be removed; other spec fields (nodeName included) are immutable."""
    name = new["metadata"]["name"]
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    for gate in new_spec.get("schedulingGates") or []:
        if gate.get("name") not in old_gates:
            message = (
                f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'"
            )
            raise invalid("Pod", name, [forbidden_field("spec.schedulingGates", message)])
    if _strip_images(_without(old_spec)) != _strip_images(_without(new_spec)):
        message = (
            "pod updates may not change fields other than `spec.containers[*].image`, "
            "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing "
            "tolerations) and `spec.schedulingGates` (only deletion)"
        )
        raise invalid("Pod", name, [forbidden_field("spec", message)])


def _without(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k not in MUTABLE_POD_SPEC}


def _strip_images(spec: dict) -> dict:
    stripped = dict(spec)
    for field in ("containers", "initContainers"):
        if field in stripped:
            stripped[field] = [
                {k: v for k, v in c.items() if k != "image"} for c in stripped[field]
            ]
    return stripped


def validate_binding(pod: dict, binding: dict) -> str:
    """The node to bind to; 409 when the pod is gated, bound or being deleted."""
    name = pod["metadata"]["name"]
    target = binding.get("target") or {}
    node, kind = target.get("name") or "", target.get("kind") or ""
    causes = []
    if kind and kind != "Node":  # ValidatePodBinding
        causes.append(unsupported_field("target.kind", kind, ("Node", "<empty>")))
    if not node:
        causes.append(required_field("target.name"))
    if causes:
        raise invalid("Binding", name, causes)

    def conflict(reason: str) -> ApiError:
        return ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": {reason}')

    spec, meta = pod.get("spec") or {}, pod["metadata"]
    expected_uid = (binding.get("metadata") or {}).get("uid")
    if expected_uid and expected_uid != meta.get("uid"):
        raise conflict(
            f"Precondition failed: UID in precondition: {expected_uid}, UID in object meta: {meta.get('uid')}"
        )
    if meta.get("deletionTimestamp"):
        raise conflict(f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise conflict(f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise conflict(f"pod {name} has non-empty .spec.schedulingGates")
    return node
