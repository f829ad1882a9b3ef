"""Watch streams: newline-delimited JSON events, ``ERROR`` with a 410 Status when too old."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from simcluster.api.errors import ApiError, status_object
from simcluster.store import Gone, Store, WatchEvent

DEFAULT_TIMEOUT_SECONDS = 1800.0
CAUGHT_UP = None
"""Yielded by ``watch_events`` between events when no further event is waiting: the stream is
written out then (kube-apiserver's WatchServer flushes when its channel is empty, and only
then: ``if len(ch) == 0 { flusher.Flush() }`` in
k8s.io/apiserver/pkg/endpoints/handlers/watch.go, kubernetes 034debc1)."""


def watch_events(
    store: Store,
    plural: str,
    namespace: str,
    matches: Callable[[dict], bool],
    resource_version: str,
    *,
    timeout: float,
    stop: threading.Event,
) -> Iterator[dict | None]:
    """Watch events as ``{"type", "object"}`` dicts, oldest first, with ``CAUGHT_UP`` after
    each run of events that were all there when the watcher looked.

    Without a resourceVersion (or "0") the stream starts with ADDED for every current object,
    as kube-apiserver does; a version the log no longer holds yields one ERROR event (410).
    """
    if resource_version in ("", "0"):
        items, version = store.list(plural, namespace or None)
        for obj in items:
            if matches(obj):
                yield {"type": "ADDED", "object": obj}
        yield CAUGHT_UP
    else:
        version = _parse_version(resource_version)
    try:
        for batch in store.watch_batches(plural, version, timeout=timeout, stop=stop):
            for event in batch:
                event_type = _filtered_type(event, namespace, matches)
                if event_type:
                    yield {"type": event_type, "object": event.object}
            yield CAUGHT_UP
    except Gone as error:
        yield {"type": "ERROR", "object": status_object(410, str(error), "Expired")}


def _filtered_type(event: WatchEvent, namespace: str, matches: Callable[[dict], bool]) -> str:
    """The event type a filtered watcher sees: an object leaving the filter is DELETED for it,
    one entering it is ADDED; events outside the filter are dropped ("")."""

    def selected(obj: dict | None) -> bool:
        in_namespace = (
            not namespace or (obj or {}).get("metadata", {}).get("namespace") == namespace
        )
        return obj is not None and in_namespace and matches(obj)

    now = selected(event.object)
    if event.type != "MODIFIED":
        return event.type if now else ""
    before = selected(event.previous)
    if now:
        return "MODIFIED" if before else "ADDED"
    return "DELETED" if before else ""


def _parse_version(resource_version: str) -> int:
    try:
        return int(resource_version)
    except ValueError:
        raise ApiError(400, f'invalid resource version "{resource_version}"') from None
