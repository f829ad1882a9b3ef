"""JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

The strategic merge covers what Sluice and kubectl send: maps merge, ``null`` deletes, lists
named in ``MERGE_KEYS`` merge by their key (conditions by ``type``, containers by ``name``…),
``$patch: delete|replace`` directives, ``$deleteFromPrimitiveList/<field>``, and kubectl's
``$setElementOrder/<field>`` and ``$retainKeys`` hints (accepted; order is the server's).
"""

from __future__ import annotations

import copy
import json

import jsonpatch

from simcluster.api.decoding import MAX_BODY_DEPTH, nesting_depth
from simcluster.api.errors import ApiError, bad_request

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# List field name -> the key its items merge on (Kubernetes' patchMergeKey tags).
MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "readinessGates": "conditionType",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "podIPs": "ip",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "webhooks": "name",  # MutatingWebhookConfiguration
    "finalizers": None,  # a merged primitive list
}


def apply_patch(content_type: str, original: dict, patch_body: bytes, *, custom: bool) -> dict:
    """Apply a patch of ``content_type`` to a copy of ``original``."""
    media_type = content_type.split(";")[0].strip().lower()
    if media_type == STRATEGIC_MERGE_PATCH and custom or media_type not in _PATCHERS:
        accepted = [JSON_PATCH, MERGE_PATCH] + ([] if custom else [STRATEGIC_MERGE_PATCH])
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(accepted)}",
        )
    try:
        patch = json.loads(patch_body or b"null")
    except ValueError as error:
        raise bad_request(f"error decoding patch: {error}") from None
    except RecursionError:
        raise bad_request("error decoding patch: nested too deeply") from None
    if nesting_depth(patch) > MAX_BODY_DEPTH:
        raise bad_request(f"error decoding patch: nested more than {MAX_BODY_DEPTH} levels")
    result = _PATCHERS[media_type](copy.deepcopy(original), patch)
    if not isinstance(result, dict):
        raise bad_request("the patch turned the object into something that is not an object")
    return result


def _json_patch(original: dict, patch: object) -> dict:
    if not isinstance(patch, list):
        raise bad_request("json patch must be a list of operations")
    try:
        return jsonpatch.JsonPatch(patch).apply(original)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
        # kube-apiserver answers a failing test or missing path with 422.
        raise ApiError(
            422, f"the server rejected our request due to an error in our request: {error}"
        ) from None
    except (TypeError, KeyError, ValueError) as error:
        raise bad_request(f"invalid json patch: {error}") from None


def merge_patch(target: object, patch: object) -> object:
    """RFC 7386: objects merge recursively, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_patch(original: dict, patch: object) -> dict:
    if not isinstance(patch, dict):
        raise bad_request("merge patch must be a JSON object")
    return merge_patch(original, patch)


def strategic_merge(target: object, patch: object) -> object:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_list(result.get(key) or [], value, MERGE_KEYS[key])
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


def _merge_list(current: list, patch: list, merge_key: str | None) -> list:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [i for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    if merge_key is None:  # primitive list: union, order kept
        return list(current) + [v for v in patch if v not in current]
    merged = [copy.deepcopy(item) for item in current]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise bad_request(f"map in a merging list is missing its merge key {merge_key!r}")
        index = next(
            (i for i, old in enumerate(merged) if old.get(merge_key) == item[merge_key]), None
        )
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append(strategic_merge({}, item))
        else:
            merged[index] = strategic_merge(merged[index], item)
    return merged


def _strategic_merge_patch(original: dict, patch: object) -> dict:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return strategic_merge(original, patch)


_PATCHERS = {
    JSON_PATCH: _json_patch,
    MERGE_PATCH: _merge_patch,
    STRATEGIC_MERGE_PATCH: _strategic_merge_patch,
}
