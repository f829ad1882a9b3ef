"""In-memory object store with Kubernetes' optimistic concurrency and an ordered watch log.

Objects are plain Kubernetes JSON dicts. Every write gets the next cluster-wide
``resourceVersion``; a write that carries a stale one raises ``Conflict``. Watchers read the
log from a resourceVersion on; a version older than the log keeps raises ``Gone`` (HTTP 410),
so a client must relist, exactly as against a real kube-apiserver.

The store knows nothing of HTTP and enforces no pod rules: the API layer validates before it
writes, and the kubelet and autoscaler simulations use the store directly.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

# kind (the resource's plural name) -> namespaced?
KINDS: dict[str, bool] = {
    "namespaces": False,
    "nodes": False,
    "pods": True,
    "events": True,
    "configmaps": True,
    "queues": False,
    "podgroups": True,
    "priorityclasses": False,
    "poddisruptionbudgets": True,
    "leases": True,
}


class StoreError(Exception):
    """Base of the errors the API layer turns into ``Status`` objects."""

    code = 500
    reason = "InternalError"


class NotFound(StoreError):
    code, reason = 404, "NotFound"


class AlreadyExists(StoreError):
    code, reason = 409, "AlreadyExists"


class Conflict(StoreError):
    code, reason = 409, "Conflict"


class Gone(StoreError):
    code, reason = 410, "Expired"


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    object: dict
    # The object before a MODIFIED write, so a filtered watch can tell an object that stopped
    # matching its selector (sent as DELETED, as kube-apiserver does) from one that changed.
    previous: dict | None = None


def object_key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def describe(kind: str, namespace: str, name: str) -> str:
    """``pods "web-1"`` in namespace style, the way kube-apiserver names objects in errors."""
    return f'{kind} "{name}"' + (f' in namespace "{namespace}"' if namespace else "")


def utc_timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Thread-safe store of every kind in ``KINDS``; all reads and writes return copies."""

    def __init__(self, now: Callable[[], float], *, watch_log_size: int = 20_000) -> None:
        self._now = now
        self._objects: dict[str, dict[tuple[str, str], dict]] = {kind: {} for kind in KINDS}
        self._log: deque[WatchEvent] = deque(maxlen=watch_log_size)
        self._rv = 0
        self._changed = threading.Condition()
        self._observers: list[Callable[[WatchEvent], None]] = []

    # -- reads -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def latest_version(self, kinds: Iterable[str]) -> int:
        """The resourceVersion of the newest change to any of ``kinds`` still in the log: what
        a watcher of those kinds has seen once it is caught up."""
        wanted = set(kinds)
        with self._changed:
            for event in reversed(self._log):
                if event.kind in wanted:
                    return event.resource_version
        return 0

    def get(self, kind: str, namespace: str, name: str) -> dict:
        with self._changed:
            obj = self._objects[kind].get((namespace if KINDS[kind] else "", name))
            if obj is None:
                raise NotFound(
                    f"{describe(kind, namespace if KINDS[kind] else '', name)} not found"
                )
            return copy.deepcopy(obj)

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict], int]:
        """Every object of ``kind`` (in ``namespace`` when given) and the version listed at."""
        with self._changed:
            items = [
                copy.deepcopy(obj)
                for (ns, _), obj in sorted(self._objects[kind].items())
                if namespace is None or ns == namespace
            ]
            return items, self._rv

    # -- writes ------------------------------------------------------------------------------

    def add_observer(self, observer: Callable[[WatchEvent], None]) -> None:
        """Call ``observer`` with every change, under the lock, before the write returns (the
        simulation's controllers that must never lag, e.g. the disruption controller). It may
        write: its own writes reach every observer too."""
        self._observers.append(observer)

    def locked(self) -> threading.Condition:
        """The store's (re-entrant) lock, to hold across several reads and writes."""
        return self._changed

    def create(self, kind: str, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not KINDS[kind]:
            meta.pop("namespace", None)
        key = object_key(obj)
        with self._changed:
            if key in self._objects[kind]:
                raise AlreadyExists(f"{describe(kind, *key)} already exists")
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", utc_timestamp(self._now()))
            meta.pop("deletionTimestamp", None)
            return self._write(kind, key, obj, "ADDED")

    def update(self, kind: str, obj: dict, *, check_version: bool = True) -> dict:
        """Replace an object. A ``metadata.resourceVersion`` that is not current is a Conflict."""
        obj = copy.deepcopy(obj)
        key = object_key(obj)
        with self._changed:
            current = self._objects[kind].get(key)
            if current is None:
                raise NotFound(f"{describe(kind, *key)} not found")
            sent = obj["metadata"].get("resourceVersion")
            if check_version and sent and sent != current["metadata"]["resourceVersion"]:
                raise Conflict(
                    f"Operation cannot be fulfilled on {describe(kind, *key)}: the object has "
                    "been modified; please apply your changes to the latest version and try again"
                )
            # Identity fields are the server's, whatever the client sent.
            for field in ("uid", "creationTimestamp"):
                obj["metadata"][field] = current["metadata"][field]
            return self._write(kind, key, obj, "MODIFIED", previous=current)

    def mutate(self, kind: str, namespace: str, name: str, change: Callable[[dict], None]) -> dict:
        """Read-modify-write under the lock (for the simulation's own controllers)."""
        with self._changed:
            obj = self.get(kind, namespace, name)
            change(obj)
            obj["metadata"].pop("resourceVersion", None)
            return self.update(kind, obj, check_version=False)

    def delete(self, kind: str, namespace: str, name: str) -> dict:
        key = (namespace if KINDS[kind] else "", name)
        with self._changed:
            obj = self._objects[kind].pop(key, None)
            if obj is None:
                raise NotFound(f"{describe(kind, *key)} not found")
            self._rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self._rv)
            event = WatchEvent(self._rv, kind, "DELETED", obj)
            self._log.append(event)
            self._changed.notify_all()
            self._notify(event)
            return copy.deepcopy(obj)

    def _write(
        self,
        kind: str,
        key: tuple[str, str],
        obj: dict,
        event_type: str,
        previous: dict | None = None,
    ) -> dict:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._objects[kind][key] = obj
        # ``previous`` is the replaced stored dict: nothing mutates it any more, so no copy.
        event = WatchEvent(self._rv, kind, event_type, copy.deepcopy(obj), previous)
        self._log.append(event)
        self._changed.notify_all()
        result = copy.deepcopy(obj)
        self._notify(event)
        return result

    def _notify(self, event: WatchEvent) -> None:
        for observer in self._observers:
            observer(event)

    # -- watch -------------------------------------------------------------------------------

    def events_since(self, kind: str, resource_version: int) -> list[WatchEvent]:
        """Events of ``kind`` after ``resource_version``; ``Gone`` when the log no longer has them."""
        with self._changed:
            oldest = self._log[0].resource_version if self._log else self._rv + 1
            if resource_version < oldest - 1 and resource_version < self._rv:
                raise Gone(f"too old resource version: {resource_version} ({oldest - 1})")
            return [
                e for e in self._log if e.kind == kind and e.resource_version > resource_version
            ]

    def watch(
        self, kind: str, resource_version: int, *, timeout: float, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        """Yield events from ``resource_version`` on, waiting up to ``timeout`` for new ones."""
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.daemon = True
        timer.start()
        try:
            last = resource_version
            while not (deadline.is_set() or stop.is_set()):
                with self._changed:  # re-entrant: events_since takes the same lock
                    events = self.events_since(kind, last)
                    read_up_to = self._rv
                    if not events:
                        self._changed.wait(timeout=0.5)
                yield from events
                last = read_up_to
        finally:
            timer.cancel()

    # -- persistence -------------------------------------------------------------------------

    def dump(self) -> dict:
        with self._changed:
            return {
                "resourceVersion": self._rv,
                "objects": {kind: list(objs.values()) for kind, objs in self._objects.items()},
            }

    def load(self, state: dict) -> None:
        with self._changed:
            self._rv = int(state["resourceVersion"])
            self._log.clear()
            for kind, items in state["objects"].items():
                self._objects[kind] = {object_key(obj): obj for obj in items}
