"""URL paths of the Kubernetes REST API, parsed into what a request addresses."""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.api.errors import ApiError
from simcluster.api.resources import RESOURCES


@dataclass(frozen=True)
class Route:
    group: str
    version: str
    plural: str = ""  # empty for discovery of the group version itself
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    legacy_watch: bool = False  # /api/v1/watch/... paths


def parse_resource_path(parts: list[str]) -> Route | None:
    """``parts`` of ``/api/v1/...`` or ``/apis/<group>/<version>/...``; None when not such a path."""
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    if not rest:
        return Route(group, version)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] in RESOURCES:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise ApiError(404, "the server could not find the requested resource")
    plural, name, subresource = (rest + ["", ""])[:3]
    _check_resource(group, version, plural, namespace, subresource)
    return Route(group, version, plural, namespace, name, subresource, legacy_watch)


def _check_resource(
    group: str, version: str, plural: str, namespace: str, subresource: str
) -> None:
    resource = RESOURCES.get(plural)
    if resource is None or (resource.group, resource.version) != (group, version):
        raise ApiError(404, f"the server could not find the requested resource ({plural})")
    if namespace and not resource.namespaced:
        raise ApiError(404, f"the server could not find the requested resource ({plural})")
    if subresource and subresource not in resource.subresources:
        raise ApiError(
            404, f"the server could not find the requested resource ({plural}/{subresource})"
        )
