"""Core v1 Secret, as kube-apiserver writes and validates it (Kubernetes v1.32).

* ``data`` values are ``[]byte``: JSON carries them as base64, and a value that is not base64
  fails the request's decoding with 400 (``Secret in version "v1" cannot be handled as a
  Secret: illegal base64 data at input byte N``, ``simcluster.api.decoding``), before any
  validation; the answer's details name the field (``data[key]``).
* ``stringData`` is write-only: the v1 -> internal conversion
  (``pkg/apis/core/v1/conversion.go``, ``Convert_v1_Secret_To_core_Secret``) merges it into
  ``data``, its keys overriding, and it is never stored nor returned.
* ``type`` defaults to ``Opaque`` (``SetDefaults_Secret``) and cannot change on update
  (``ValidateSecretUpdate``: ``ValidateImmutableField``); an ``immutable`` Secret keeps its
  data and stays immutable.
* ``ValidateSecret`` (``pkg/apis/core/validation/validation.go``): data keys are config keys,
  all values hold at most 1 MiB together, and each type's required keys are present.
"""

from __future__ import annotations

import base64
import json
import re

from simcluster.api.errors import (
    forbidden_field,
    invalid,
    invalid_field,
    required_field,
    too_long_field,
)
from simcluster.api.validation import CONFIG_KEY, MAX_CONFIG_MAP_BYTES

MAX_SECRET_BYTES = MAX_CONFIG_MAP_BYTES  # core.MaxSecretSize
CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    f"'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '{CONFIG_KEY}')"
)
# Each type's keys that must be in data (core.SecretType* and their keys).
REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}
JSON_KEYS = {
    "kubernetes.io/dockercfg": ".dockercfg",
    "kubernetes.io/dockerconfigjson": ".dockerconfigjson",
}


def prepare(obj: dict) -> dict:
    """The Secret as it is stored: stringData merged into data (base64), type defaulted."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    if not obj.get("type"):
        obj["type"] = "Opaque"
    return obj


def validate(obj: dict) -> None:
    name = str(obj["metadata"].get("name") or "")
    causes = _secret_causes(obj)
    if causes:
        raise invalid("Secret", name, causes)


def validate_update(current: dict, new: dict) -> None:
    name = str(new["metadata"].get("name") or "")
    causes = []
    if new.get("type") != current.get("type"):
        causes.append(invalid_field("type", new.get("type"), "field is immutable"))
    if current.get("immutable") is True:
        message = "field is immutable when `immutable` is set"
        if new.get("immutable") is not True:
            causes.append(forbidden_field("immutable", message))
        if (new.get("data") or {}) != (current.get("data") or {}):
            causes.append(forbidden_field("data", message))
    causes.extend(_secret_causes(new))
    if causes:
        raise invalid("Secret", name, causes)


def _secret_causes(obj: dict) -> list[tuple[str, str, str]]:
    causes = []
    data = obj.get("data") or {}
    total = 0
    for key, value in data.items():
        if len(key) > 253 or not re.fullmatch(CONFIG_KEY, key):
            causes.append(invalid_field(f"data[{key}]", key, CONFIG_KEY_MESSAGE))
        total += len(base64.b64decode(value)) if value else 0
    if total > MAX_SECRET_BYTES:
        causes.append(too_long_field("data", MAX_SECRET_BYTES))
    kind = obj.get("type") or "Opaque"
    if kind == "kubernetes.io/service-account-token":
        annotations = obj["metadata"].get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            field = "metadata.annotations[kubernetes.io/service-account.name]"
            causes.append(required_field(field))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            causes.extend([required_field("data[username]"), required_field("data[password]")])
    else:
        for key in REQUIRED_KEYS.get(kind, ()):
            # ssh-auth wants a non-empty key; the others only its presence
            if key not in data or (kind == "kubernetes.io/ssh-auth" and not data[key]):
                causes.append(required_field(f"data[{key}]"))
        json_key = JSON_KEYS.get(kind)
        if json_key and json_key in data:
            try:
                json.loads(base64.b64decode(data[json_key]))
            except ValueError as error:
                causes.append(
                    invalid_field(f"data[{json_key}]", "<secret contents redacted>", str(error))
                )
    return causes
