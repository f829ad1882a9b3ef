"""Request bodies in Kubernetes' protobuf encoding, read into the JSON the API works on.

kubectl's typed clients send ``Content-Type: application/vnd.kubernetes.protobuf`` for the
objects its ``create`` generators build (``kubectl create namespace|configmap|secret|
priorityclass|poddisruptionbudget``) and, unlike for CBOR, client-go does not fall back to JSON
on a 415. So the simulated API server reads them: the envelope (the magic ``k8s\\0``, then a
``runtime.Unknown`` holding the TypeMeta and the object's bytes, k8s.io/apimachinery
pkg/runtime/serializer/protobuf) and, for the kinds below, the object by the field numbers of
their generated.proto (k8s.io/api core/v1, scheduling/v1, policy/v1; apimachinery meta/v1,
util/intstr). The JSON is what Go's encoder would write for the decoded struct: fields that
are empty and ``omitempty`` are left out, and the server-set timestamps are dropped. Answers
stay JSON, which a client asking ``Accept: application/vnd.kubernetes.protobuf,
application/json`` takes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from simcluster.api.errors import ApiError, bad_request

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# A message: field number -> (JSON name, type). A type is "string", "bytes", "int", "bool",
# "time" (left out), "intorstring", a nested message (dict), ("repeated", type) or
# ("map", value type); "raw" is the envelope's bytes. ``KEEP_ZERO`` names the fields kept
# when zero (no ``omitempty``, or a pointer the encoder writes only when set).
Message = dict[int, tuple[str, Any]]

TYPE_META: Message = {1: ("apiVersion", "string"), 2: ("kind", "string")}
UNKNOWN: Message = {
    1: ("typeMeta", TYPE_META),
    2: ("raw", "raw"),
    3: ("contentEncoding", "string"),
    4: ("contentType", "string"),
}
OWNER_REFERENCE: Message = {
    5: ("apiVersion", "string"), 1: ("kind", "string"), 3: ("name", "string"),
    4: ("uid", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool"),
}  # fmt: skip
OBJECT_META: Message = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
    7: ("generation", "int"), 8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", ("map", "string")), 12: ("annotations", ("map", "string")),
    13: ("ownerReferences", ("repeated", OWNER_REFERENCE)),
    14: ("finalizers", ("repeated", "string")),
}  # fmt: skip
LABEL_SELECTOR: Message = {
    1: ("matchLabels", ("map", "string")),
    2: ("matchExpressions", ("repeated", {
        1: ("key", "string"), 2: ("operator", "string"), 3: ("values", ("repeated", "string")),
    })),
}  # fmt: skip
KINDS: dict[tuple[str, str], Message] = {
    ("v1", "Namespace"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("finalizers", ("repeated", "string"))}),
        3: ("status", {1: ("phase", "string")}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", OBJECT_META),
        4: ("immutable", "bool"),
        2: ("data", ("map", "string")),
        3: ("binaryData", ("map", "bytes")),
    },
    ("v1", "Secret"): {
        1: ("metadata", OBJECT_META),
        5: ("immutable", "bool"),
        2: ("data", ("map", "bytes")),
        4: ("stringData", ("map", "string")),
        3: ("type", "string"),
    },
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: ("metadata", OBJECT_META),
        2: ("value", "int"),
        3: ("globalDefault", "bool"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "string"),
    },
    ("policy/v1", "PodDisruptionBudget"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {
            1: ("minAvailable", "intorstring"), 2: ("selector", LABEL_SELECTOR),
            3: ("maxUnavailable", "intorstring"), 4: ("unhealthyPodEvictionPolicy", "string"),
        }),
    },
}  # fmt: skip
# Written by Go's encoder even when zero (no omitempty), or pointers kept when set.
KEEP_ZERO = frozenset(
    {"value", "immutable", "controller", "blockOwnerDeletion", "minAvailable", "maxUnavailable"}
)


class _Malformed(ValueError):
    pass


def to_json(body: bytes) -> dict:
    """The object a protobuf request body carries, as JSON; 400 when it does not decode, 415
    for a kind this server does not read in protobuf."""
    if not body.startswith(MAGIC):
        raise bad_request("the protobuf body does not start with the k8s\\x00 prefix")
    try:
        envelope = _message(body[len(MAGIC) :], UNKNOWN)
        type_meta = envelope.get("typeMeta") or {}
        key = (type_meta.get("apiVersion", ""), type_meta.get("kind", ""))
        if key not in KINDS:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types "
                f"include: application/json (protobuf is read for "
                f"{', '.join(kind for _, kind in KINDS)}, not {key[1] or 'this kind'})",
            )
        obj = _message(envelope.get("raw", b""), KINDS[key])
    except _Malformed as error:
        raise bad_request(f"the protobuf body could not be decoded: {error}") from None
    return {"apiVersion": key[0], "kind": key[1], **obj}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, wire, value
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise _Malformed(f"field {number} runs past the end")
            yield number, wire, data[at : at + length]
            at += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if at + size > len(data):
                raise _Malformed(f"field {number} runs past the end")
            yield number, wire, int.from_bytes(data[at : at + size], "little")
            at += size
        else:
            raise _Malformed(f"field {number}: wire type {wire} is not used by Kubernetes")


def _message(data: bytes, schema: Message) -> dict:
    out: dict[str, Any] = {}
    for number, wire, raw in _fields(data):
        if number not in schema:
            continue  # a field this server does not read
        name, kind = schema[number]
        if isinstance(kind, tuple) and kind[0] == "repeated":
            out.setdefault(name, []).append(_scalar(raw, wire, kind[1], name))
        elif isinstance(kind, tuple) and kind[0] == "map":
            entry = _message(_bytes(raw, name), {1: ("key", "string"), 2: ("value", kind[1])})
            out.setdefault(name, {})[entry.get("key", "")] = entry.get("value", "")
        else:
            out[name] = _scalar(raw, wire, kind, name)
    return {k: v for k, v in out.items() if v is not _DROP and (k in KEEP_ZERO or _set(v))}


_DROP = object()


def _set(value: object) -> bool:
    return value not in ("", 0, False, None, [], {})


def _bytes(raw: int | bytes, name: str) -> bytes:
    if not isinstance(raw, bytes):
        raise _Malformed(f"{name}: expected a length-delimited field")
    return raw


def _scalar(raw: int | bytes, wire: int, kind: Any, name: str) -> Any:
    if isinstance(kind, dict):
        return _message(_bytes(raw, name), kind)
    if kind == "string":
        try:
            return _bytes(raw, name).decode("utf-8")
        except UnicodeDecodeError:
            raise _Malformed(f"{name}: not UTF-8") from None
    if kind == "raw":
        return _bytes(raw, name)
    if kind == "bytes":
        return base64.b64encode(_bytes(raw, name)).decode()  # JSON carries []byte as base64
    if kind == "time":
        return _DROP
    if kind == "intorstring":
        value = _message(_bytes(raw, name), {1: ("type", "int"), 2: ("intVal", "int"),
                                             3: ("strVal", "string")})  # fmt: skip
        return value.get("strVal", "") if value.get("type") == 1 else value.get("intVal", 0)
    if wire != 0 or not isinstance(raw, int):
        raise _Malformed(f"{name}: expected a varint")
    if kind == "bool":
        return raw != 0
    return raw - (1 << 64) if raw >= 1 << 63 else raw  # int32/int64: two's complement
