"""Reads from (and writes to) the cluster through the kubernetes client, each failure put in
words for the page.

Pages that need the cluster call these per request, so each call is one request with the
configured timeout. A failure raises a ``ClusterError`` whose message says, in words, which
request failed and why — never the client's raw exception — and whose ``status`` is the HTTP
status a page answers with: ``ObjectNotFound`` (404, "namespace X does not exist"),
``ClusterRefused`` (the API server answered no: forbidden, conflict, invalid, throttled, its
own failure; 502) or ``ClusterUnavailable`` (no answer, or no cluster configured; 503).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

import urllib3
from django.conf import settings
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from dashboard import kube
from scheduler.api.labels import PROVISIONER_LABEL, QUEUE_ALLOCATION_GATE, SCALE_UP_ANNOTATION
from scheduler.api.queue_info import as_written, unlimited_by_rule

AUTOSCALER_REASONS = {"TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown"}
T = TypeVar("T")


class ClusterError(Exception):
    """A request to the cluster failed; the message says which and why, in words."""

    status = 503  # what a page answers with


class ClusterUnavailable(ClusterError):
    """No answer from the cluster (unreachable, timed out), or no cluster configured."""


class ClusterRefused(ClusterError):
    """The API server answered, and refused (forbidden, conflict, invalid, its own error)."""

    status = 502


class ObjectNotFound(ClusterRefused):
    status = 404


def cluster_call(what: str, request, *, target: str = ""):
    """``request`` with the configured timeout; ``what`` names the request in words ("label
    namespace batch") and ``target`` the object it is about ("namespace batch"), for a 404."""
    try:
        return request(_request_timeout=settings.SLUICE_KUBE_TIMEOUT)
    except ApiException as exc:
        raise refused(what, target, exc) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterUnavailable(f"cluster unreachable: {what}: {no_answer(exc)}") from exc


def refused(what: str, target: str, exc: ApiException) -> ClusterError:
    """The API server's answer in words."""
    status = exc.status or 0
    detail = _status_message(exc)
    if status == 404:
        if target:
            return ObjectNotFound(f"{target} does not exist")
        return ObjectNotFound(f"cannot {what}: not found ({detail})")
    if status == 401:
        return ClusterRefused(
            f"cannot {what}: the cluster did not accept Sluice's credentials (401 Unauthorized)"
        )
    if status == 403:
        return ClusterRefused(f"cannot {what}: the cluster forbids it (403 Forbidden): {detail}")
    if status == 409:
        return ClusterRefused(
            f"cannot {what}: it changed meanwhile (409 Conflict): {detail}; try again"
        )
    if status in (400, 422):
        return ClusterRefused(
            f"cannot {what}: the cluster refused the request as invalid: {detail}"
        )
    if status == 429:
        return ClusterRefused(
            f"cannot {what}: the cluster is throttling requests (429 Too Many Requests); "
            "try again shortly"
        )
    if status >= 500:
        return ClusterRefused(
            f"cannot {what}: the cluster's API server failed ({status} {exc.reason}): {detail}"
        )
    if status == 0:  # raised by the client itself, no answer behind it
        return ClusterUnavailable(f"cluster unreachable: {what}: {exc.reason or detail}")
    return ClusterRefused(f"cannot {what}: the cluster answered {status} {exc.reason}: {detail}")


def _status_message(exc: ApiException) -> str:
    """The message of the API server's Status object, else the HTTP reason."""
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(exc.reason or "no detail")


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\"\)\]]+)")


def no_answer(exc: BaseException) -> str:
    """Why the cluster did not answer, in a few words (not urllib3's nested repr)."""
    reason = getattr(exc, "reason", None) or exc
    pool = getattr(exc, "pool", None)
    where = f"{pool.host}:{pool.port}: " if getattr(pool, "host", None) else ""
    # The socket's own error first: urllib3 2 makes NewConnectionError (connection refused, a
    # name that does not resolve) a subclass of ConnectTimeoutError, though nothing timed out.
    match = _ERRNO.search(str(reason))
    if match:
        return f"{where}{match.group(1).strip().lower()}"
    timeouts = (urllib3.exceptions.TimeoutError, TimeoutError)
    if isinstance(reason, timeouts) or isinstance(exc, timeouts):
        return f"{where}no answer within {settings.SLUICE_KUBE_TIMEOUT:g} s"
    if isinstance(reason, urllib3.exceptions.SSLError):
        return f"{where}TLS handshake failed"
    if isinstance(reason, urllib3.exceptions.ProtocolError):
        return f"{where}the connection broke off"
    return f"{where}{type(reason).__name__}"


def core_api() -> client.CoreV1Api:
    try:
        return client.CoreV1Api(kube.api_client())
    except (RuntimeError, ConfigException) as exc:
        raise ClusterUnavailable(str(exc)) from exc


def read_namespace(name: str) -> dict:
    """Namespace ``name`` with its opt-in label; ObjectNotFound when it does not exist."""
    core = core_api()
    ns = cluster_call(
        f"read namespace {name}",
        lambda **kw: core.read_namespace(name, **kw),
        target=f"namespace {name}",
    )
    labels = ns.metadata.labels or {}
    return {"name": name, "opted_in": labels.get(QUEUE_ALLOCATION_GATE) == "true"}


def namespace_list() -> list[dict]:
    """Every namespace with its opt-in label."""
    items = cluster_call("list namespaces", core_api().list_namespace).items
    return [
        {
            "name": ns.metadata.name,
            "opted_in": (ns.metadata.labels or {}).get(QUEUE_ALLOCATION_GATE) == "true",
        }
        for ns in sorted(items, key=lambda n: n.metadata.name)
    ]


def queue_specs() -> dict[str, dict]:
    """The Queue objects by name: parent, weight, reclaimable (the tree's shape), and
    capability, deserved and guarantee as written, with the CPU or memory capabilities at or
    below zero that mean no limit (``unlimited``)."""
    custom = client.CustomObjectsApi(core_api().api_client)
    listing = cluster_call(
        "list queues",
        lambda **kw: custom.list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", **kw
        ),
    )
    specs = {}
    for item in listing.get("items", []):
        spec = item.get("spec") or {}
        capability = as_written(spec.get("capability"))
        specs[item["metadata"]["name"]] = {
            "parent": spec.get("parent") or ("" if item["metadata"]["name"] == "root" else "root"),
            "guarantee": as_written((spec.get("guarantee") or {}).get("resource")),
            "capability": capability,
            "deserved": as_written(spec.get("deserved")),
            "unlimited": unlimited_by_rule(capability),
            "weight": spec.get("weight", 1),
            "reclaimable": spec.get("reclaimable", True),
        }
    return specs


def autoscaler_activity(limit: int = 200) -> tuple[list[dict], list[dict]]:
    """``(scale-up records, autoscaler events)``, their four requests sent together: a page
    that needs several answers from the cluster waits for the slowest, not for their sum."""
    answers = concurrently(
        _provisioned_nodes, *(partial(_events_of, r) for r in sorted(AUTOSCALER_REASONS))
    )
    return _scale_up_records(answers[0]), _autoscaler_events(answers[1:], limit)


def _provisioned_nodes() -> list[dict]:
    """Only the nodes the simulated autoscalers added (they carry ``sim.sluice.io/provisioner``:
    a label selector, not every node of the cluster), read as the API's JSON rather than the
    generated client's models."""

    def list_nodes(**kw):
        return core_api().list_node(label_selector=PROVISIONER_LABEL, _preload_content=False, **kw)

    return json.loads(cluster_call("list nodes", list_nodes).data).get("items") or []


def _events_of(reason: str) -> list[dict]:
    """Events of one reason: a ``reason=`` field selector (kube-apiserver's, for events), never
    every event of the cluster (a scheduler writes several per pod); the API's JSON."""

    def list_events(**kw):
        return core_api().list_event_for_all_namespaces(
            field_selector=f"reason={reason}", _preload_content=False, **kw
        )

    return json.loads(cluster_call("list events", list_events).data).get("items") or []


def _scale_up_records(nodes: list[dict]) -> list[dict]:
    """The simulated autoscalers' records on the nodes they added, newest first."""
    records = []
    for node in nodes:
        raw = ((node.get("metadata") or {}).get("annotations") or {}).get(SCALE_UP_ANNOTATION)
        if not raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # not ours to judge; an unreadable record is left out
        record["at"] = datetime.fromtimestamp(record["time"], tz=UTC)
        records.append(record)
    return sorted(records, key=lambda r: r["time"], reverse=True)


def _autoscaler_events(lists: list[list[dict]], limit: int) -> list[dict]:
    """Scale-up, no-scale-up and scale-down events, newest first."""
    events = []
    for items in lists:
        for e in items:
            if e.get("reason") not in AUTOSCALER_REASONS:
                continue
            involved = e.get("involvedObject") or {}
            stamp = (
                e.get("lastTimestamp")
                or e.get("eventTime")
                or e.get("firstTimestamp")
                or (e.get("metadata") or {}).get("creationTimestamp")
            )
            events.append({
                "at": _timestamp(stamp),
                "reason": e["reason"],
                "kind": involved.get("kind"),
                "namespace": involved.get("namespace") or "",
                "name": involved.get("name"),
                "message": e.get("message") or "",
            })  # fmt: skip
    events.sort(key=lambda e: e["at"] or datetime.min.replace(tzinfo=UTC), reverse=True)
    return events[:limit]


def _timestamp(text: object) -> datetime | None:
    """An event's RFC 3339 time (``eventTime`` has microseconds), as the client's models
    read it; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cluster-read")


def concurrently(*calls: Callable[[], T]) -> list[T]:
    """Each call's result, in order, the calls made at the same time; the first error raises.
    A call must not itself wait on this pool (it could wait for a worker forever)."""
    futures = [_POOL.submit(call) for call in calls]
    return [future.result() for future in futures]
