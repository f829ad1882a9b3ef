"""One API request: discovery documents, or a verb on a resource, mapped onto ``Cluster``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simcluster.api import protobuf
from simcluster.api import resources as docs
from simcluster.api.cluster import Cluster
from simcluster.api.decoding import MAX_BODY_DEPTH, nesting_depth
from simcluster.api.errors import ApiError, bad_request, success_status
from simcluster.api.openapi import openapi_group_version, openapi_root
from simcluster.api.protobuf import PROTOBUF
from simcluster.api.routing import Route, parse_resource_path
from simcluster.api.selectors import selector_match
from simcluster.api.tables import render_table
from simcluster.api.watch import DEFAULT_TIMEOUT_SECONDS, watch_events
from simcluster.store import ContinueExpired

if TYPE_CHECKING:
    from simcluster.faults import Faults

Response = tuple[int, dict | Iterator[dict]]


@dataclass(frozen=True)
class RequestContext:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    server_url: str
    stopping: threading.Event

    def json_body(self) -> dict:
        media_type = self.headers.get("content-type", "application/json").split(";")[0].strip()
        if media_type == PROTOBUF:  # kubectl's typed clients (kubectl create namespace …)
            return protobuf.to_json(self.body)
        if media_type not in ("application/json", "", "*/*"):
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types "
                f'include: application/json (got "{media_type}")',
            )
        try:
            body = json.loads(self.body or b"{}")
        except ValueError as error:  # not JSON, not UTF-8, an integer past 4300 digits
            raise bad_request(f"the request body is not valid JSON: {error}") from None
        except RecursionError:
            raise bad_request("the request body is not valid JSON: nested too deeply") from None
        if nesting_depth(body) > MAX_BODY_DEPTH:
            raise bad_request(
                f"the request body is not valid JSON: nested more than {MAX_BODY_DEPTH} levels"
            )
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        return body

    @property
    def wants_table(self) -> bool:
        return "as=table" in self.headers.get("accept", "").lower().replace(" ", "")


def dispatch(cluster: Cluster, request: RequestContext, faults: Faults | None = None) -> Response:
    """Serve ``request``; with ``faults`` (``simcluster.faults``), perhaps with an injected one."""
    if faults is not None:
        return faults.serve(
            request.method, request.path, request.query, lambda: dispatch(cluster, request),
            request.body,
        )  # fmt: skip
    parts = [p for p in request.path.split("/") if p]
    document = _discovery(parts, request)
    if document is not None:
        return 200, document
    if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "bindings":
        return _legacy_binding(cluster, parts[3], request)
    route = parse_resource_path(parts)
    if route is None:
        raise ApiError(
            404, f"the server could not find the requested resource (path {request.path})"
        )
    if not route.plural:
        listing = docs.api_resource_list(route.group, route.version)
        if listing is None or request.method != "GET":
            raise ApiError(404, "the server could not find the requested resource")
        return 200, listing
    return _resource_request(cluster, route, request)


def _legacy_binding(cluster: Cluster, namespace: str, request: RequestContext) -> Response:
    """``POST /api/v1/namespaces/{ns}/bindings``: the Binding names its pod in metadata.name."""
    if request.method != "POST":
        raise ApiError(405, f"the server does not allow {request.method} on bindings")
    body = request.json_body()
    meta = body.get("metadata")
    name = (meta.get("name") if isinstance(meta, dict) else None) or ""
    if not name and (meta is None or isinstance(meta, dict)):
        raise bad_request("a Binding needs metadata.name, the name of the pod to bind")
    # A metadata that is not an object goes on to the decoder's 400 in ``bind``.
    cluster.bind(namespace, name, body)
    return 201, success_status(201)


def _discovery(parts: list[str], request: RequestContext) -> dict | None:
    if request.method != "GET":
        return None
    if parts == ["version"]:
        return docs.version_document()
    if parts == ["api"]:
        return docs.core_versions(request.server_url.removeprefix("http://"))
    if parts == ["apis"]:
        return docs.api_group_list()
    if parts[:2] == ["openapi", "v3"]:
        document = openapi_root() if len(parts) == 2 else openapi_group_version("/".join(parts[2:]))
        if document is None:
            raise ApiError(
                404, f"the server could not find the requested resource (path {request.path})"
            )
        return document
    if len(parts) == 2 and parts[0] == "apis":
        group = docs.api_group(parts[1])
        if group is None:
            raise ApiError(
                404, f"the server could not find the requested resource (group {parts[1]})"
            )
        return group
    return None


def _resource_request(cluster: Cluster, route: Route, request: RequestContext) -> Response:
    if route.legacy_watch:
        return 200, _watch(cluster, route, request)
    handler = _collection_request if not route.name else _item_request
    response = handler(cluster, route, request)
    if response is None:
        raise ApiError(
            405,
            f"the server does not allow this method on the requested resource "
            f"({request.method} {request.path})",
        )
    return response


def _collection_request(cluster: Cluster, route: Route, request: RequestContext) -> Response | None:
    if request.method == "GET" and _flag(request.query.get("watch")):
        return 200, _watch(cluster, route, request)
    if request.method == "GET":
        return 200, _list(cluster, route, request)
    if request.method == "POST":
        created = cluster.create_object(route.plural, request.json_body(), route.namespace or None)
        return 201, _render_one(cluster, route, request, created)
    return None


def _item_request(cluster: Cluster, route: Route, request: RequestContext) -> Response | None:
    method, sub, target = (
        request.method,
        route.subresource,
        (route.plural, route.namespace, route.name),
    )
    if method == "POST" and sub in ("binding", "eviction"):
        action = cluster.bind if sub == "binding" else cluster.evict
        action(route.namespace, route.name, request.json_body())
        return 201, success_status(201)
    if sub not in ("", "status"):
        return None
    if method == "GET":
        return 200, _render_one(cluster, route, request, cluster.get(*target))
    if method == "PUT":
        return 200, cluster.update(*target, request.json_body(), sub)
    if method == "PATCH":
        content_type = request.headers.get("content-type", "")
        return 200, cluster.patch(*target, content_type, request.body, sub)
    if method == "DELETE" and not sub:
        return 200, cluster.delete(*target, _delete_options(request))
    return None


def _delete_options(request: RequestContext) -> dict:
    options = request.json_body() if request.body else {}
    if "gracePeriodSeconds" in request.query:
        options["gracePeriodSeconds"] = _int(
            request.query["gracePeriodSeconds"], "gracePeriodSeconds"
        )
    return options


class ContinueTooOld(ApiError):
    """410 Expired for a continue token the log no longer covers; its Status carries, in
    ``metadata.continue``, a token to go on from the present (kube-apiserver does the same)."""

    def __init__(self, message: str, fresh: str) -> None:
        super().__init__(410, message, reason="Expired")
        self.fresh = fresh

    def status(self) -> dict:
        status = super().status()
        status["metadata"] = {"continue": self.fresh}
        return status


def _list(cluster: Cluster, route: Route, request: RequestContext) -> dict:
    query = request.query
    limit = _int(query.get("limit") or "0", "limit")
    continue_ = query.get("continue", "")
    wanted = query.get("resourceVersion", "")
    if continue_ and wanted:
        raise bad_request("specifying resource version is not allowed when using continue")
    try:
        page = cluster.list_page(
            route.plural,
            route.namespace,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            limit=max(limit, 0),
            continue_=continue_,
        )
    except ContinueExpired as error:
        raise ContinueTooOld(str(error), error.fresh) from None
    items, version = page.items, page.resource_version
    if query.get("resourceVersionMatch") == "Exact" and wanted and wanted != str(version):
        # The store keeps only the present; an exact older snapshot is gone.
        raise ApiError(410, f"too old resource version: {wanted} ({version})", reason="Expired")
    metadata: dict = {"resourceVersion": str(version)}
    if page.continue_:
        metadata["continue"] = page.continue_
        if page.remaining is not None:
            metadata["remainingItemCount"] = page.remaining
    if request.wants_table:
        table = render_table(
            route.plural, items, cluster.now(), query.get("includeObject", "Metadata"), str(version)
        )
        table["metadata"] = metadata  # kubectl --chunk-size pages through Tables too
        return table
    resource = docs.RESOURCES[route.plural]
    return {
        "kind": f"{resource.kind}List",
        "apiVersion": resource.api_version,
        "metadata": metadata,
        "items": items,
    }


def _render_one(cluster: Cluster, route: Route, request: RequestContext, obj: dict) -> dict:
    if request.wants_table and not route.subresource:
        include = request.query.get("includeObject", "Metadata")
        return render_table(
            route.plural, [obj], cluster.now(), include, obj["metadata"]["resourceVersion"]
        )
    return obj


def _watch(cluster: Cluster, route: Route, request: RequestContext) -> Iterator[dict | None]:
    query = request.query
    fields = query.get("fieldSelector")
    if route.name:  # /watch/namespaces/ns/pods/name
        fields = f"metadata.name={route.name}"
    match = selector_match(route.plural, query.get("labelSelector"), fields) or _everything
    version = query.get("resourceVersion", "")
    if version and not version.isdigit():
        raise bad_request(f'invalid resource version "{version}"')
    timeout = (
        float(_int(query.get("timeoutSeconds", "0"), "timeoutSeconds")) or DEFAULT_TIMEOUT_SECONDS
    )
    events = watch_events(
        cluster.store,
        route.plural,
        route.namespace,
        match,
        version,
        timeout=timeout,
        stop=request.stopping,
    )
    if not request.wants_table:
        return events
    return _as_tables(cluster, route, events, query.get("includeObject", "Metadata"))


def _everything(obj: dict) -> bool:
    return True


def _as_tables(
    cluster: Cluster, route: Route, events: Iterator[dict | None], include: str
) -> Iterator[dict | None]:
    for event in events:
        if event is None:  # watch.CAUGHT_UP
            yield event
            continue
        obj = event["object"]
        if event["type"] != "ERROR":
            obj = render_table(
                route.plural, [obj], cluster.now(), include, obj["metadata"]["resourceVersion"]
            )
        yield {"type": event["type"], "object": obj}


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{name} must be an integer, got {value!r}") from None
