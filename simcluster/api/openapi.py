"""Just enough OpenAPI v3 for kubectl: the PATCH operations and their ``fieldValidation`` query
parameter tell ``kubectl apply`` that this server validates fields itself, so kubectl skips
client-side schema validation (which would need the full schemas) — no ``--validate`` flag needed.
"""

from __future__ import annotations

from simcluster.api.resources import RESOURCES, Resource

QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "force")
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _group_versions() -> dict[str, list[Resource]]:
    by_path: dict[str, list[Resource]] = {}
    for resource in RESOURCES.values():
        prefix = f"apis/{resource.group}/{resource.version}" if resource.group else "api/v1"
        by_path.setdefault(prefix, []).append(resource)
    return by_path


def openapi_root() -> dict:
    return {
        "paths": {
            prefix: {"serverRelativeURL": f"/openapi/v3/{prefix}?hash=sluice-sim-1"}
            for prefix in _group_versions()
        }
    }


def openapi_group_version(prefix: str) -> dict | None:
    resources = _group_versions().get(prefix)
    if resources is None:
        return None
    paths = {_item_path(prefix, r): {"patch": _patch_operation(r)} for r in resources}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _item_path(prefix: str, resource: Resource) -> str:
    namespace = "namespaces/{namespace}/" if resource.namespaced else ""
    return f"/{prefix}/{namespace}{resource.plural}/{{name}}"


def _patch_operation(resource: Resource) -> dict:
    types = PATCH_TYPES[:2] if resource.custom else PATCH_TYPES
    return {
        "operationId": f"patch{resource.kind}",
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string"}} for name in QUERY_PARAMETERS
        ],
        "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in types}},
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {
            "group": resource.group,
            "version": resource.version,
            "kind": resource.kind,
        },
    }
