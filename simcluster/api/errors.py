"""API errors as ``metav1.Status`` objects, shaped the way kube-apiserver shapes them."""

from __future__ import annotations

import re

from simcluster.api.resources import RESOURCES
from simcluster.store import StoreError

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    500: "InternalError",
}


class ApiError(Exception):
    """An error the server answers with a ``Status`` body and the matching HTTP code."""

    def __init__(
        self, code: int, message: str, *, reason: str = "", details: dict | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict:
        return status_object(self.code, self.message, self.reason, self.details)


def status_object(code: int, message: str, reason: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def success_status(code: int = 201) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
    """422 Invalid, as ``errors.NewInvalid``; ``causes`` are ``(field, cause reason, message)``
    triples. Several are summed up as Go prints an aggregate: ``[a, b]``, repeats once."""
    messages = list(dict.fromkeys(f"{field}: {message}" for field, _, message in causes))
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    details = {
        "name": name,
        **({"group": group} if group else {}),
        "kind": kind,
        "causes": [
            {"reason": reason, "message": message, "field": field}
            for field, reason, message in causes
        ],
    }
    qualified_kind = f"{kind}.{group}" if group else kind
    return ApiError(422, f'{qualified_kind} "{name}" is invalid: {summary}', details=details)


def forbidden(plural: str, name: str, reason: str) -> ApiError:
    """403, as ``errors.NewForbidden`` (and admission's ``NewForbidden``) words it."""
    group = RESOURCES[plural].group
    details = {"name": name, **({"group": group} if group else {}), "kind": plural}
    return ApiError(403, f'{qualified(plural)} "{name}" is forbidden: {reason}', details=details)


def forbidden_field(field: str, message: str) -> tuple[str, str, str]:
    return field, "FieldValueForbidden", f"Forbidden: {message}"


def invalid_field(field: str, value: object, message: str) -> tuple[str, str, str]:
    return field, "FieldValueInvalid", f"Invalid value: {_quote(value)}: {message}"


def required_field(field: str) -> tuple[str, str, str]:
    return field, "FieldValueRequired", "Required value"


def unsupported_field(
    field: str, value: object, supported: tuple[str, ...]
) -> tuple[str, str, str]:
    listed = ", ".join(f'"{v}"' for v in supported)
    return (
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {_quote(value)}: supported values: {listed}",
    )


def too_long_field(field: str, limit: int) -> tuple[str, str, str]:
    """``field.TooLong`` (apimachinery v0.32): the value itself is never shown."""
    return field, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes"


def _quote(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def conflict(plural: str, name: str) -> ApiError:
    message = (
        f'Operation cannot be fulfilled on {qualified(plural)} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    return ApiError(409, message, reason="Conflict", details=object_details(plural, name))


def object_details(plural: str, name: str) -> dict:
    return {"name": name, "kind": plural}


def qualified(plural: str) -> str:
    """``pods``, ``queues.scheduling.volcano.sh``: how kube-apiserver names a resource."""
    group = RESOURCES[plural].group
    return f"{plural}.{group}" if group else plural


def store_error(error: StoreError, plural: str, name: str) -> ApiError:
    """The store's error, worded as kube-apiserver words it (no namespace in the message)."""
    pattern = rf'{plural} "[^"]*"( in namespace "[^"]*")?'
    message = re.sub(pattern, f'{qualified(plural)} "{name}"', str(error), count=1)
    return ApiError(error.code, message, reason=error.reason, details=object_details(plural, name))
