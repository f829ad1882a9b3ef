"""Decoding a request body as kube-apiserver's JSON decoder does, before any validation.

kube-apiserver decodes a built-in object (a Pod) into its Go struct with sigs.k8s.io/json, a
fork of encoding/json: a value of the wrong JSON type for its field fails the request with
400 Bad Request, worded as encoding/json's UnmarshalTypeError::

    Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go
    struct field PodSpec.spec.containers of type []v1.Container

(the innermost struct's name, the field's path of JSON names, the Go type). Decoding goes on
past such an error and reports the first one; a custom unmarshaler's error (a Quantity's
``ParseQuantity``) stops it and is reported instead. A JSON null is the field's zero value:
the object that is stored has none, as kube-apiserver's round trip through Go leaves none.

The Go types below are those of k8s.io/api core/v1 and apimachinery meta/v1 for the fields
Sluice, its simulated cluster and their clients read; a field not listed is taken as it is.
Custom resources are decoded without types (their schema validates them, see
``structural``); their metadata is decoded as ObjectMeta, as apiextensions-apiserver's
objectmeta.GetObjectMetaWithOptions does for a request body.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from scheduler.api.quantity import kube_syntax_error
from simcluster.api.errors import ApiError, bad_request
from simcluster.api.resources import Resource
from simcluster.api.validation import go_base64_decode, go_base64_error

# Kubernetes objects are a few levels deep; a body nested deeper than this would make the
# server's own copies and walks recurse past Python's limit (kube-apiserver's decoder stops at
# 10,000 levels, which Python cannot follow).
MAX_BODY_DEPTH = 100


def nesting_depth(value: object) -> int:
    """How deep ``value`` nests, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_BODY_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


@dataclass(frozen=True)
class GoType:
    go: str  # as reflect.Type.String() prints it: "[]v1.Container", "int32"
    kind: str  # string, int, uint, bool, float, struct, slice, map, quantity, any
    bits: int = 64
    struct: str = ""  # a struct's name, for the error's "Go struct field <struct>.<path>"
    fields: dict[str, GoType] = field(default_factory=dict)
    elem: GoType | None = None


STRING = GoType("string", "string")
BOOL = GoType("bool", "bool")
INT32 = GoType("int32", "int", 32)
INT64 = GoType("int64", "int", 64)
ANY = GoType("interface {}", "any")
QUANTITY = GoType("resource.Quantity", "quantity")
# A []byte: JSON carries it as standard base64 (CR and LF skipped), written back canonical.
BYTES = GoType("[]uint8", "bytes")


def named(go: str) -> GoType:
    """A named string type (``v1.TolerationOperator``)."""
    return GoType(go, "string")


def struct(go: str, fields: dict[str, GoType]) -> GoType:
    return GoType(go, "struct", struct=go.rpartition(".")[2], fields=fields)


def slice_of(elem: GoType) -> GoType:
    return GoType(f"[]{elem.go}", "slice", elem=elem)


def map_of(elem: GoType, go: str = "") -> GoType:
    return GoType(go or f"map[string]{elem.go}", "map", elem=elem)


STRINGS = slice_of(STRING)
STRING_MAP = map_of(STRING)
RESOURCE_LIST = map_of(QUANTITY, "v1.ResourceList")

OWNER_REFERENCE = struct(
    "v1.OwnerReference",
    {"apiVersion": STRING, "kind": STRING, "name": STRING, "uid": named("types.UID"),
     "controller": BOOL, "blockOwnerDeletion": BOOL},
)  # fmt: skip
OBJECT_META = struct(
    "v1.ObjectMeta",
    {"name": STRING, "generateName": STRING, "namespace": STRING, "selfLink": STRING,
     "uid": named("types.UID"), "resourceVersion": STRING, "generation": INT64,
     "deletionGracePeriodSeconds": INT64, "labels": STRING_MAP, "annotations": STRING_MAP,
     "ownerReferences": slice_of(OWNER_REFERENCE), "finalizers": STRINGS},
)  # fmt: skip

RESOURCE_REQUIREMENTS = struct(
    "v1.ResourceRequirements", {"limits": RESOURCE_LIST, "requests": RESOURCE_LIST}
)
CONTAINER = struct(
    "v1.Container",
    {"name": STRING, "image": STRING, "command": STRINGS, "args": STRINGS, "workingDir": STRING,
     "ports": slice_of(struct("v1.ContainerPort", {
         "name": STRING, "hostPort": INT32, "containerPort": INT32,
         "protocol": named("v1.Protocol"), "hostIP": STRING})),
     "env": slice_of(struct("v1.EnvVar", {"name": STRING, "value": STRING})),
     "resources": RESOURCE_REQUIREMENTS,
     "restartPolicy": named("v1.ContainerRestartPolicy"),
     "terminationMessagePath": STRING,
     "terminationMessagePolicy": named("v1.TerminationMessagePolicy"),
     "imagePullPolicy": named("v1.PullPolicy"), "stdin": BOOL, "stdinOnce": BOOL, "tty": BOOL},
)  # fmt: skip
NODE_SELECTOR_REQUIREMENT = struct(
    "v1.NodeSelectorRequirement",
    {"key": STRING, "operator": named("v1.NodeSelectorOperator"), "values": STRINGS},
)
NODE_SELECTOR_TERM = struct(
    "v1.NodeSelectorTerm",
    {"matchExpressions": slice_of(NODE_SELECTOR_REQUIREMENT),
     "matchFields": slice_of(NODE_SELECTOR_REQUIREMENT)},
)  # fmt: skip
AFFINITY = struct(
    "v1.Affinity",
    {"nodeAffinity": struct("v1.NodeAffinity", {
        "requiredDuringSchedulingIgnoredDuringExecution": struct(
            "v1.NodeSelector", {"nodeSelectorTerms": slice_of(NODE_SELECTOR_TERM)}),
        "preferredDuringSchedulingIgnoredDuringExecution": slice_of(struct(
            "v1.PreferredSchedulingTerm", {"weight": INT32, "preference": NODE_SELECTOR_TERM})),
    })},
)  # fmt: skip
TOLERATION = struct(
    "v1.Toleration",
    {"key": STRING, "operator": named("v1.TolerationOperator"), "value": STRING,
     "effect": named("v1.TaintEffect"), "tolerationSeconds": INT64},
)  # fmt: skip
POD_SPEC = struct(
    "v1.PodSpec",
    {"initContainers": slice_of(CONTAINER), "containers": slice_of(CONTAINER),
     "restartPolicy": named("v1.RestartPolicy"), "terminationGracePeriodSeconds": INT64,
     "activeDeadlineSeconds": INT64, "dnsPolicy": named("v1.DNSPolicy"),
     "nodeSelector": STRING_MAP, "serviceAccountName": STRING, "serviceAccount": STRING,
     "automountServiceAccountToken": BOOL, "nodeName": STRING, "hostNetwork": BOOL,
     "hostPID": BOOL, "hostIPC": BOOL, "shareProcessNamespace": BOOL,
     "imagePullSecrets": slice_of(struct("v1.LocalObjectReference", {"name": STRING})),
     "hostname": STRING, "subdomain": STRING, "affinity": AFFINITY, "schedulerName": STRING,
     "tolerations": slice_of(TOLERATION), "priorityClassName": STRING, "priority": INT32,
     "readinessGates": slice_of(struct("v1.PodReadinessGate",
                                       {"conditionType": named("v1.PodConditionType")})),
     "runtimeClassName": STRING, "enableServiceLinks": BOOL,
     "preemptionPolicy": named("v1.PreemptionPolicy"), "overhead": RESOURCE_LIST,
     "setHostnameAsFQDN": BOOL, "hostUsers": BOOL,
     "schedulingGates": slice_of(struct("v1.PodSchedulingGate", {"name": STRING})),
     "resources": RESOURCE_REQUIREMENTS},
)  # fmt: skip
POD_STATUS = struct(
    "v1.PodStatus",
    {"phase": named("v1.PodPhase"),
     "conditions": slice_of(struct("v1.PodCondition", {
         "type": named("v1.PodConditionType"), "status": named("v1.ConditionStatus"),
         "reason": STRING, "message": STRING})),
     "message": STRING, "reason": STRING, "nominatedNodeName": STRING, "hostIP": STRING,
     "podIP": STRING, "qosClass": named("v1.PodQOSClass"),
     "containerStatuses": slice_of(struct("v1.ContainerStatus", {
         "name": STRING, "ready": BOOL, "restartCount": INT32, "image": STRING,
         "imageID": STRING, "containerID": STRING, "started": BOOL}))},
)  # fmt: skip


def _object(go: str, **parts: GoType) -> GoType:
    return struct(go, {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT_META, **parts})


LABEL_SELECTOR = struct(
    "v1.LabelSelector",
    {"matchLabels": STRING_MAP,
     "matchExpressions": slice_of(struct("v1.LabelSelectorRequirement", {
         "key": STRING, "operator": named("v1.LabelSelectorOperator"), "values": STRINGS}))},
)  # fmt: skip
# k8s.io/api admissionregistration/v1 (types.go): MutatingWebhook and what it holds.
MUTATING_WEBHOOK = struct(
    "v1.MutatingWebhook",
    {"name": STRING,
     "clientConfig": struct("v1.WebhookClientConfig", {
         "url": STRING,
         "service": struct("v1.ServiceReference", {
             "namespace": STRING, "name": STRING, "path": STRING, "port": INT32}),
         "caBundle": BYTES}),
     "rules": slice_of(struct("v1.RuleWithOperations", {
         "operations": slice_of(named("v1.OperationType")), "apiGroups": STRINGS,
         "apiVersions": STRINGS, "resources": STRINGS, "scope": named("v1.ScopeType")})),
     "failurePolicy": named("v1.FailurePolicyType"), "matchPolicy": named("v1.MatchPolicyType"),
     "namespaceSelector": LABEL_SELECTOR, "objectSelector": LABEL_SELECTOR,
     "sideEffects": named("v1.SideEffectClass"), "timeoutSeconds": INT32,
     "admissionReviewVersions": STRINGS,
     "reinvocationPolicy": named("v1.ReinvocationPolicyType"),
     "matchConditions": slice_of(struct("v1.MatchCondition", {
         "name": STRING, "expression": STRING}))},
)  # fmt: skip

# k8s.io/api coordination/v1 LeaseSpec: the durations and the transition count are *int32.
LEASE_SPEC = struct(
    "v1.LeaseSpec",
    {"holderIdentity": STRING, "leaseDurationSeconds": INT32, "acquireTime": STRING,
     "renewTime": STRING, "leaseTransitions": INT32, "strategy": named("v1.CoordinatedLeaseStrategy"),
     "preferredHolder": STRING},
)  # fmt: skip
OBJECT_REFERENCE = struct(
    "v1.ObjectReference",
    {"kind": STRING, "namespace": STRING, "name": STRING, "uid": named("types.UID"),
     "apiVersion": STRING, "resourceVersion": STRING, "fieldPath": STRING},
)  # fmt: skip
DELETE_OPTIONS = struct(
    "v1.DeleteOptions",
    {"kind": STRING, "apiVersion": STRING, "gracePeriodSeconds": INT64,
     "preconditions": struct("v1.Preconditions", {
         "uid": named("types.UID"), "resourceVersion": STRING}),
     "orphanDependents": BOOL, "propagationPolicy": named("v1.DeletionPropagation"),
     "dryRun": STRINGS},
)  # fmt: skip
# The bodies of the pods/binding and pods/eviction subresources (core/v1 Binding, policy/v1
# Eviction), decoded as kube-apiserver's decoder does before BindingREST/EvictionREST.Create.
BINDING = _object("v1.Binding", target=OBJECT_REFERENCE)
EVICTION = _object("v1.Eviction", deleteOptions=DELETE_OPTIONS)

# What each built-in resource decodes into; the others decode their metadata only.
TYPES: dict[str, GoType] = {
    "leases": _object("v1.Lease", spec=LEASE_SPEC),
    "pods": _object("v1.Pod", spec=POD_SPEC, status=POD_STATUS),
    "secrets": _object(
        "v1.Secret",
        immutable=BOOL,
        data=map_of(BYTES),
        stringData=STRING_MAP,
        type=named("v1.SecretType"),
    ),
    "mutatingwebhookconfigurations": _object(
        "v1.MutatingWebhookConfiguration", webhooks=slice_of(MUTATING_WEBHOOK)
    ),
}


@dataclass
class _Decoding:
    type_error: str = ""  # the first UnmarshalTypeError (or base64 error), saved; decoding goes on
    stop_error: str = ""  # an unmarshaler's error: decoding stops there
    stop_field: str = ""
    type_field: str = ""
    map_key: str | None = None  # the key of the map value being decoded, to name its field


def decode(resource: Resource, obj: dict) -> dict:
    """``obj`` as kube-apiserver's decoder leaves it (nulls gone), or a 400 ApiError worded as
    its decoder words the first error."""
    if resource.custom:
        return _custom_metadata(resource, obj)
    return decode_as(resource, TYPES.get(resource.plural, _object(f"v1.{resource.kind}")), obj)


def decode_as(resource: Resource, go_type: GoType, obj: dict) -> dict:
    """``obj`` decoded into ``go_type``, or the decoder's 400 naming ``resource``'s kind."""
    state = _Decoding()
    decoded = _walk(obj, go_type, [], go_type.struct, state)
    error, where = (
        (state.stop_error, state.stop_field)
        if state.stop_error
        else (state.type_error, state.type_field)
    )
    if error:
        raise _cannot_decode(resource, error, where)
    return decoded


def _cannot_decode(resource: Resource, error: str, where: str) -> ApiError:
    failure = bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a '
        f"{resource.kind}: {error}"
    )
    # kube-apiserver's 400 has no details; these name the field for a client that reads them
    # (a quantity's ParseQuantity error does not name it).
    failure.details = {
        "kind": resource.plural,
        "causes": [{"reason": "FieldValueInvalid", "message": error, "field": where}],
    }
    return failure


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _literal(value: object) -> str:
    return json.dumps(value)  # the number's text, as the client wrote it


def _walk(value: object, t: GoType, path: list[str], owner: str, state: _Decoding) -> object:
    """``value`` decoded into ``t``: the first type error kept in ``state``; nulls dropped."""
    if value is None or t.kind == "any":
        return value

    def mismatch(described: str) -> object:
        if not state.type_error:
            state.type_error = (
                f"json: cannot unmarshal {described} into Go struct field "
                f"{owner}.{'.'.join(path)} of type {t.go}"
            )
            state.type_field = ".".join(path)
        return _zero(t)

    kind = t.kind
    if kind == "quantity":
        error = kube_syntax_error(value if isinstance(value, str | int | float) else [])
        if error and not state.stop_error:
            state.stop_error, state.stop_field = error, ".".join(path)
        return value
    if kind == "string":
        return value if isinstance(value, str) else mismatch(_json_kind(value))
    if kind == "bytes":
        if not isinstance(value, str):
            return mismatch(_json_kind(value))
        raw = value.encode("utf-8", "surrogatepass")
        decoded = go_base64_decode(raw)
        if decoded is None:
            # encoding/json saves base64.CorruptInputError as it is: no field in the message.
            if not state.type_error:
                state.type_error = f"illegal base64 data at input byte {go_base64_error(raw)}"
                where = ".".join(path)
                state.type_field = where if state.map_key is None else f"{where}[{state.map_key}]"
            return ""
        return base64.b64encode(decoded).decode()
    if kind == "bool":
        return value if isinstance(value, bool) else mismatch(_json_kind(value))
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return mismatch(_json_kind(value))
        limit = 2 ** (t.bits - 1)
        if isinstance(value, float) or not -limit <= value < limit:
            return mismatch(f"number {_literal(value)}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return mismatch(_json_kind(value))
        return value
    if kind == "slice":
        if not isinstance(value, list):
            return mismatch(_json_kind(value))
        assert t.elem is not None
        return [_element(v, t.elem, path, owner, state) for v in value]
    if kind == "map":
        if not isinstance(value, dict):
            return mismatch(_json_kind(value))
        assert t.elem is not None
        out_map = {}
        for k, v in value.items():
            state.map_key = k
            out_map[k] = _element(v, t.elem, path, owner, state)
        state.map_key = None
        return out_map
    if kind == "struct":
        if not isinstance(value, dict):
            return mismatch(_json_kind(value))
        out = {}
        for key, item in value.items():
            if item is None:
                continue  # the zero value: omitted when the object is written back
            field_type = t.fields.get(key)
            out[key] = (
                item
                if field_type is None
                else _walk(item, field_type, [*path, key], t.struct, state)
            )
        return out
    return value


def _element(value: object, t: GoType, path: list[str], owner: str, state: _Decoding) -> object:
    """A slice element or map value: null is the element type's zero value."""
    if value is None:
        return _zero(t)
    return _walk(value, t, path, owner, state)


def _zero(t: GoType) -> object:
    return {"string": "", "bytes": "", "bool": False, "int": 0, "float": 0, "quantity": "0",
            "struct": {}}.get(t.kind)  # fmt: skip


# -- custom resources: ObjectMeta's fields are decoded as ObjectMeta ----------------------
#
# apiextensions-apiserver decodes a request's custom object with unstructuredSchemaCoercer,
# whose objectmeta.GetObjectMetaWithOptions runs with DropMalformedFields false for a request
# body (customresource_handler.go; it drops them only when reading from storage): a field of
# metadata that does not unmarshal into ObjectMeta (labels that are a list, an annotation that
# is a number) fails the request with the decoder's 400.


def _custom_metadata(resource: Resource, obj: dict) -> dict:
    meta = obj.get("metadata")
    if meta is None:
        return obj
    if not isinstance(meta, dict):
        error = f"json: cannot unmarshal {_json_kind(meta)} into Go value of type v1.ObjectMeta"
        raise _cannot_decode(resource, error, "metadata")
    state = _Decoding()
    decoded = _walk(meta, OBJECT_META, [], OBJECT_META.struct, state)
    if state.stop_error or state.type_error:
        where = state.stop_field if state.stop_error else state.type_field
        raise _cannot_decode(resource, state.stop_error or state.type_error, f"metadata.{where}")
    return {**obj, "metadata": decoded}
