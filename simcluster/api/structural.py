"""Custom resources as kube-apiserver takes them: by their CRD's structural schema.

apiextensions-apiserver, for a Queue or a PodGroup: a null that the schema does not allow
(``nullable``) is dropped, or replaced by the field's ``default`` (structural defaulting);
absent fields with a default get it, inside objects that are there; then the object is
validated against the schema (k8s.io/kube-openapi pkg/validation/validate, errors turned into
field errors by apiextensions' kubeOpenAPIResultToFieldErrors) and every error is one cause of
a 422 Invalid::

    Queue.scheduling.volcano.sh "q" is invalid: spec.weight: Invalid value: -3:
    spec.weight in body should be greater than or equal to 1

On an update, an error on a value that the update did not change is not reported (CRD
validation ratcheting, on by default since Kubernetes v1.30). The schemas are Volcano's own
(``volcano_crds``).
"""

from __future__ import annotations

import copy
import re

from simcluster.api.errors import (
    invalid,
    invalid_field,
    required_field,
    too_long_field,
    unsupported_field,
)
from simcluster.api.resources import Resource
from simcluster.api.volcano_crds import SCHEMAS

Cause = tuple[str, str, str]
_MAX_JSON_INTEGER = 2**53  # swag.IsFloat64AJSONInteger: a float that is an integer


def schema_of(resource: Resource) -> dict | None:
    return SCHEMAS.get(resource.plural)


def default_custom(resource: Resource, obj: dict) -> dict:
    """``obj`` with the nulls the schema does not allow dropped and defaults applied."""
    schema = schema_of(resource)
    if schema is None:
        return obj
    out = copy.deepcopy(obj)
    _default(out, schema)
    return out


def _default(value: object, schema: dict) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in list(value):
            sub = properties.get(key) or (
                schema.get("additionalProperties")
                if isinstance(schema.get("additionalProperties"), dict)
                else None
            )
            if value[key] is None and sub is not None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                else:
                    del value[key]
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def validate_custom(resource: Resource, obj: dict, old: dict | None = None) -> None:
    """422 with every schema error as a cause; on an update, errors on unchanged values are
    not reported."""
    schema = schema_of(resource)
    if schema is None:
        return
    found: list[tuple[Cause, tuple]] = []
    for key in ("spec", "status"):  # apiVersion, kind and metadata are the server's to check
        if key in obj and key in (schema.get("properties") or {}):
            _validate(obj[key], schema["properties"][key], key, (key,), found)
    causes = [c for c, keys in found if old is None or not _unchanged(keys, obj, old)]
    if causes:
        name = obj.get("metadata", {}).get("name") or ""
        raise invalid(resource.kind, str(name), causes, resource.group)


def _json_type(value: object) -> str:
    """How kube-openapi's type validator names the value's type (for an integer: past an
    int64, JSON decoding made it a float64)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -(2**63) <= value < 2**63 else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _types(schema: dict) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    return [schema["type"]] if schema.get("type") else []


def _type_fits(value: object, allowed: list[str]) -> bool:
    kind = _json_type(value)
    if not allowed or kind in allowed:
        return True
    if kind == "integer" and "number" in allowed:
        return True
    return (
        kind == "number"
        and "integer" in allowed
        and isinstance(value, float)
        and value.is_integer()
        and abs(value) <= _MAX_JSON_INTEGER
    )


def _number(limit: float) -> str:
    return str(int(limit)) if float(limit).is_integer() else str(limit)


def _validate(
    value: object, schema: dict, path: str, keys: tuple, found: list[tuple[Cause, tuple]]
) -> None:
    """Every schema error in ``value`` (at ``path``, ``keys`` from the root) into ``found``."""
    causes: list[Cause] = []
    _check(value, schema, path, causes)
    found.extend((cause, keys) for cause in causes)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None and _type_fits(value, _types(schema)):
                _validate(item, sub, f"{path}.{key}", (*keys, key), found)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _validate(item, schema["items"], f"{path}[{i}]", (*keys, i), found)


def _check(value: object, schema: dict, path: str, causes: list[Cause]) -> None:
    """The errors of ``value`` itself (its children are walked by ``_validate``)."""
    if value is None:
        return  # a null the schema allows (the others were dropped when defaulting)
    allowed = _types(schema)
    if not _type_fits(value, allowed):
        kind = _json_type(value)
        message = f'{path} in body must be of type {",".join(allowed)}: "{kind}"'
        causes.append((path, "FieldValueTypeInvalid", f'Invalid value: "{kind}": {message}'))
        return
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            message = (
                f"{path} in body should be greater than or equal to {_number(schema['minimum'])}"
            )
            causes.append(invalid_field(path, value, message))
        if "maximum" in schema and value > schema["maximum"]:
            message = f"{path} in body should be less than or equal to {_number(schema['maximum'])}"
            causes.append(invalid_field(path, value, message))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(too_long_field(path, schema["maxLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            message = f"{path} in body should match '{schema['pattern']}'"
            causes.append(invalid_field(path, value, message))
    if "enum" in schema and value not in schema["enum"]:
        causes.append(unsupported_field(path, value, tuple(str(v) for v in schema["enum"])))
    if isinstance(value, dict):
        for key in schema.get("required") or ():
            if key not in value:
                causes.append(required_field(f"{path}.{key}"))


def _unchanged(keys: tuple, new: dict, old: dict) -> bool:
    """The value at ``keys`` is the same in ``old`` (validation ratcheting)."""
    a: object = new
    b: object = old
    for key in keys:
        if isinstance(key, int):
            if not (isinstance(a, list) and isinstance(b, list) and key < len(a) and key < len(b)):
                return False
        elif not (isinstance(a, dict) and isinstance(b, dict) and key in a and key in b):
            return False
        a, b = a[key], b[key]  # type: ignore[index]
    return a == b
