"""What RBAC would be asked for each request: the attributes kube-apiserver authorizes.

kube-apiserver's ``RequestInfoFactory.NewRequestInfo``
(staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) turns a request into a
verb (get, list, watch, create, update, patch, delete, deletecollection), an API group, a
resource with its subresource (``pods/binding``), a namespace and a name; a path that is no
resource (``/version``, ``/api``, ``/openapi/v3``) is a non-resource request, authorized by
its path and the lower-cased HTTP method. ``ApiServer.recorder``, when set, is called with one
``RequestAttributes`` per request before it is served, as RBAC sees it before the handler does.
"""

from __future__ import annotations

from dataclasses import dataclass

_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class RequestAttributes:
    verb: str
    group: str = ""
    resource: str = ""  # "pods", "pods/binding"; empty for a non-resource request
    namespace: str = ""
    name: str = ""
    path: str = ""  # the path of a non-resource request

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)


def request_attributes(method: str, path: str, query: dict[str, str]) -> RequestAttributes:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:  # /version, /api, /apis, /apis/<group>[/<version>], /openapi/...
        return RequestAttributes(verb=method.lower(), path=path)
    watch = rest[0] == "watch"  # the deprecated /watch/ prefix
    if watch:
        rest = rest[1:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) == 2:
        namespace = rest[1]  # the namespace object itself is named by its own namespace
    resource, name, subresource = (rest + ["", ""])[:3]
    if watch or (method == "GET" and query.get("watch", "").lower() in ("true", "1")):
        verb = "watch"
    elif method == "GET":
        verb = "get" if name else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _METHOD_VERBS.get(method, method.lower())
    return RequestAttributes(
        verb=verb,
        group=group,
        resource=f"{resource}/{subresource}" if subresource else resource,
        namespace=namespace,
        name=name,
    )
