"""In-memory object store with Kubernetes' optimistic concurrency and per-kind watch logs.

Objects are plain Kubernetes JSON dicts. Every write gets the next cluster-wide
``resourceVersion``; a write that carries a stale one raises ``Conflict``. Each kind keeps its
own log of changes ordered by resourceVersion, as kube-apiserver's watch cache keeps one per
resource (``k8s.io/apiserver/pkg/storage/cacher``): a watcher reads only what is new for its
kind, from the end of that kind's log. A version older than the log keeps raises ``Gone``
(HTTP 410), so a client must relist, exactly as against a real kube-apiserver.

Lists copy only what they return, in key order (namespace, name), as etcd returns them, and
page with ``limit`` and ``continue`` as kube-apiserver does: a continue token names the
resourceVersion of the first page and the last key returned; later pages are that
resourceVersion's snapshot (rebuilt from the kind's log, the way etcd's MVCC serves an older
revision), and a token whose version the log no longer covers is ``Expired`` (410).

A kind may keep an index of its objects by a field (``add_index``), as kube-apiserver's watch
cache keeps indexers for the fields its lists select most (``IndexerFuncs`` in
``k8s.io/apiserver/pkg/storage/cacher``, e.g. pods by ``spec.nodeName``): a list selecting
``field=value`` then reads only the objects with that value, instead of every object of the
kind (the events of one reason among every event a cluster wrote).

A stored object is never changed in place: a write stores a new dict. So watch events carry
the stored dicts themselves (no copy per event), and only what leaves the store is copied.

The store knows nothing of HTTP and enforces no pod rules: the API layer validates before it
writes, and the kubelet and autoscaler simulations use the store directly.
"""

from __future__ import annotations

import base64
import bisect
import copy
import heapq
import json
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
    "secrets": True,
    "queues": False,
    "podgroups": True,
    "priorityclasses": False,
    "poddisruptionbudgets": True,
    "leases": True,
    "mutatingwebhookconfigurations": False,
}

Key = tuple[str, str]  # (namespace or "", name)


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


class InvalidContinue(StoreError):
    code, reason = 400, "BadRequest"


class ContinueExpired(Gone):
    """A continue token older than the kind's log; ``fresh`` continues from the present (an
    inconsistent list), as kube-apiserver puts in the 410's ``metadata.continue``."""

    def __init__(self, message: str, fresh: str) -> None:
        super().__init__(message)
        self.fresh = fresh


# kube-apiserver's wording (k8s.io/apiserver/pkg/storage/etcd3/store.go, GetList).
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    object: dict
    # The object before a MODIFIED or DELETED write, so a filtered watch can tell an object
    # that stopped matching its selector (sent as DELETED, as kube-apiserver does) from one
    # that changed, and a paged list can read an older snapshot.
    previous: dict | None = None


@dataclass(frozen=True)
class Page:
    """One page of a list: ``continue_`` is empty on the last page; ``remaining`` counts the
    objects after this page (None when a filter was given: unknown, as in kube-apiserver)."""

    items: list[dict]
    resource_version: int
    continue_: str = ""
    remaining: int | None = None


def object_key(obj: dict) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def describe(kind: str, namespace: str, name: str) -> str:
    """``pods "web-1"`` in namespace style, the way kube-apiserver names objects in errors."""
    return f'{kind} "{name}"' + (f' in namespace "{namespace}"' if namespace else "")


def utc_timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_IMMUTABLE = (str, int, float, bool, type(None))


def clone(value: object) -> object:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than
    ``copy.deepcopy``; anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _IMMUTABLE else clone(v) for k, v in value.items()}  # type: ignore[attr-defined]
    if kind is list:
        return [v if type(v) in _IMMUTABLE else clone(v) for v in value]  # type: ignore[attr-defined]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def _copy(obj: dict) -> dict:
    return clone(obj)  # type: ignore[return-value]


class _KindLog:
    """One kind's changes, oldest first; ``compacted`` is the newest version it dropped."""

    def __init__(self, size: int) -> None:
        self.events: deque[WatchEvent] = deque(maxlen=size)
        self.compacted = 0
        self.changed: threading.Condition | None = None

    def append(self, event: WatchEvent) -> None:
        if self.events.maxlen is not None and len(self.events) == self.events.maxlen:
            self.compacted = self.events[0].resource_version
        self.events.append(event)

    def since(self, resource_version: int) -> list[WatchEvent]:
        """Events after ``resource_version``, read from the newest back: costs what is new."""
        newer: list[WatchEvent] = []
        for event in reversed(self.events):
            if event.resource_version <= resource_version:
                break
            newer.append(event)
        newer.reverse()
        return newer

    @property
    def latest(self) -> int:
        return self.events[-1].resource_version if self.events else 0


class Store:
    """Thread-safe store of every kind in ``KINDS``; all reads and writes return copies."""

    def __init__(self, now: Callable[[], float], *, watch_log_size: int = 20_000) -> None:
        self._now = now
        self._objects: dict[str, dict[Key, dict]] = {kind: {} for kind in KINDS}
        self._keys: dict[str, list[Key]] = {kind: [] for kind in KINDS}  # sorted
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # any change
        self._logs: dict[str, _KindLog] = {kind: _KindLog(watch_log_size) for kind in KINDS}
        for kind_log in self._logs.values():
            kind_log.changed = threading.Condition(self._lock)  # this kind's changes
        self._rv = 0
        # kind -> field path -> (the field's value of an object, value -> keys with it)
        self._indexes: dict[str, dict[str, tuple[Callable[[dict], str], dict[str, set[Key]]]]] = {}
        self._observers: list[Callable[[WatchEvent], None]] = []
        self.generation = 0  # counts ``load``s: what a controller read before one is stale
        # UIDs are random (uuid4), as kube-apiserver's; with a seed, each is derived from the
        # seed, the object's kind and key and how many objects of that key were created before
        # (uuid5): a replay gives every object the UID it had, whatever order threads create
        # objects in, and UID tie-breaks (task and job order) decide alike.
        self.uid_seed: str | None = None
        self._created: dict[tuple[str, Key], int] = {}

    # -- reads -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def latest_version(self, kinds: Iterable[str]) -> int:
        """The resourceVersion of the newest change to any of ``kinds`` still in the log: what
        a watcher of those kinds has seen once it is caught up."""
        with self._lock:
            return max((self._logs[kind].latest for kind in kinds), default=0)

    def get(self, kind: str, namespace: str, name: str) -> dict:
        with self._lock:
            obj = self._objects[kind].get((namespace if KINDS[kind] else "", name))
            if obj is None:
                raise NotFound(
                    f"{describe(kind, namespace if KINDS[kind] else '', name)} not found"
                )
            return _copy(obj)

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def peek(self, kind: str, namespace: str, name: str) -> dict | None:
        """The stored object itself, or None: for the simulation's controllers, which must
        not change it (a write stores a new dict; this one stays as it is)."""
        return self._objects[kind].get((namespace if KINDS[kind] else "", name))

    def peek_all(self, kind: str) -> list[dict]:
        """Every stored object of ``kind`` itself (not copies; see ``peek``)."""
        with self._lock:
            return list(self._objects[kind].values())

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict], int]:
        """Every object of ``kind`` (in ``namespace`` when given) and the version listed at."""
        page = self.list_page(kind, namespace)
        return page.items, page.resource_version

    def list_page(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        match: Callable[[dict], bool] | None = None,
        limit: int = 0,
        continue_: str = "",
        indexed: tuple[str, str] | None = None,
    ) -> Page:
        """Objects of ``kind`` in key order that ``match`` (all when None), at most ``limit``
        (0: no limit), from ``continue_`` on; only the objects returned are copied.
        ``indexed``: ``(path, value)`` of an equality that ``match`` requires: with an index on
        ``path`` (``add_index``), only the objects with that value are read (and still
        matched), not every object of the kind."""
        with self._lock:
            keys = self._keys[kind]
            if KINDS[kind] and namespace:
                low = bisect.bisect_left(keys, (namespace, ""))
                high = bisect.bisect_left(keys, (namespace + "\x00", ""))
            else:
                low, high = 0, len(keys)
            version, overlay, after = self._rv, {}, None
            if continue_:
                version, after = self._decode_continue(kind, continue_)
                overlay = self._snapshot_overlay(kind, version)
                low = max(low, bisect.bisect_right(keys, after))
            objects = self._objects[kind]
            # Keys deleted since the snapshot are in the overlay only: merge them in order.
            gone = sorted(
                k
                for k in overlay
                if k not in objects
                and (after is None or k > after)
                and (not KINDS[kind] or not namespace or k[0] == namespace)
            )
            in_range: Iterable[Key] = (keys[i] for i in range(low, high))
            chosen = self._indexed_keys(kind, indexed) if indexed is not None else None
            if chosen is not None:
                # An object changed since the snapshot may have had the value then: the
                # overlay's keys are read too (and matched against their snapshot object).
                picked = chosen | {k for k in overlay if k in objects} if overlay else chosen
                in_range = sorted(
                    k
                    for k in picked
                    if (after is None or k > after)
                    and (not KINDS[kind] or not namespace or k[0] == namespace)
                )
            candidates = heapq.merge(in_range, gone) if gone else in_range
            items: list[dict] = []
            last: Key | None = None
            more = False
            for key in candidates:
                obj = overlay[key] if key in overlay else objects[key]
                if obj is None or (match is not None and not match(obj)):
                    continue
                if limit and len(items) == limit:
                    more = True
                    break
                items.append(_copy(obj))
                last = key
            token, remaining = "", None
            if more and last is not None:
                token = _encode_continue(version, last, KINDS[kind])
                if match is None:
                    remaining = high - bisect.bisect_right(keys, last, low, high)
            return Page(items, version, token, remaining)

    def _indexed_keys(self, kind: str, indexed: tuple[str, str]) -> set[Key] | None:
        """The keys of ``kind``'s objects whose ``path`` has ``value``; None without an index."""
        path, value = indexed
        index = self._indexes.get(kind, {}).get(path)
        if index is None:
            return None
        return index[1].get(value, set())

    def add_index(self, kind: str, path: str, value_of: Callable[[dict], str]) -> None:
        """Keep ``kind``'s keys by ``value_of(obj)``, the value a field selector on ``path``
        compares (``list_page(indexed=(path, value))`` reads those objects only)."""
        with self._lock:
            by_value: dict[str, set[Key]] = {}
            for key, obj in self._objects[kind].items():
                by_value.setdefault(value_of(obj), set()).add(key)
            self._indexes.setdefault(kind, {})[path] = (value_of, by_value)

    def _reindex(self, kind: str, key: Key, old: dict | None, new: dict | None) -> None:
        for value_of, by_value in self._indexes.get(kind, {}).values():
            if old is not None:
                value = value_of(old)
                keys = by_value.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del by_value[value]
            if new is not None:
                by_value.setdefault(value_of(new), set()).add(key)

    def _decode_continue(self, kind: str, token: str) -> tuple[int, Key]:
        try:
            raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if raw.get("v") != "meta.k8s.io/v1":
                raise ValueError(f"unsupported version {raw.get('v')!r}")
            version, start = int(raw["rv"]), str(raw["start"])
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise InvalidContinue(f"invalid continue token: {error}") from None
        start = start.removesuffix("\x00")
        namespace, _, name = start.rpartition("/") if KINDS[kind] else ("", "", start)
        key = (namespace, name)
        if version < self._logs[kind].compacted or version > self._rv:
            raise ContinueExpired(CONTINUE_EXPIRED, _encode_continue(self._rv, key, KINDS[kind]))
        return version, key

    def _snapshot_overlay(self, kind: str, version: int) -> dict[Key, dict | None]:
        """What differs between the present and ``version``: each key changed since, with its
        object at ``version`` (None where it did not exist yet)."""
        overlay: dict[Key, dict | None] = {}
        for event in self._logs[kind].since(version):
            key = object_key(event.object)
            if key not in overlay:
                overlay[key] = None if event.type == "ADDED" else event.previous
        return overlay

    # -- writes ------------------------------------------------------------------------------

    def add_observer(self, observer: Callable[[WatchEvent], None]) -> None:
        """Call ``observer`` with every change, under the lock, before the write returns (the
        simulation's controllers that must never lag, e.g. the disruption controller). It may
        write: its own writes reach every observer too. It must not change the event's
        objects (they are the stored ones)."""
        self._observers.append(observer)

    def locked(self) -> threading.Condition:
        """The store's (re-entrant) lock, to hold across several reads and writes."""
        return self._changed

    def create(self, kind: str, obj: dict) -> dict:
        obj = _copy(obj)
        meta = obj.setdefault("metadata", {})
        if not KINDS[kind]:
            meta.pop("namespace", None)
        key = object_key(obj)
        with self._lock:
            if key in self._objects[kind]:
                raise AlreadyExists(f"{describe(kind, *key)} already exists")
            meta.setdefault("uid", self._new_uid(kind, key))
            meta.setdefault("creationTimestamp", utc_timestamp(self._now()))
            meta.pop("deletionTimestamp", None)
            bisect.insort(self._keys[kind], key)
            return self._write(kind, key, obj, "ADDED")

    def _new_uid(self, kind: str, key: Key) -> str:
        if self.uid_seed is None:
            return str(uuid.uuid4())
        n = self._created.get((kind, key), 0)
        self._created[(kind, key)] = n + 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.uid_seed}/{kind}/{'/'.join(key)}/{n}"))

    def update(self, kind: str, obj: dict, *, check_version: bool = True) -> dict:
        """Replace an object. A ``metadata.resourceVersion`` that is not current is a Conflict."""
        return self._update(kind, _copy(obj), check_version)

    def _update(self, kind: str, obj: dict, check_version: bool) -> dict:
        """``update`` of an ``obj`` the store may keep (already a copy)."""
        key = object_key(obj)
        with self._lock:
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
        with self._lock:
            obj = self.get(kind, namespace, name)
            change(obj)
            obj["metadata"].pop("resourceVersion", None)
            return self._update(kind, obj, check_version=False)

    def delete(self, kind: str, namespace: str, name: str) -> dict:
        key = (namespace if KINDS[kind] else "", name)
        with self._lock:
            stored = self._objects[kind].pop(key, None)
            if stored is None:
                raise NotFound(f"{describe(kind, *key)} not found")
            keys = self._keys[kind]
            del keys[bisect.bisect_left(keys, key)]
            if kind in self._indexes:
                self._reindex(kind, key, stored, None)
            self._rv += 1
            obj = {**stored, "metadata": {**stored["metadata"], "resourceVersion": str(self._rv)}}
            self._record(WatchEvent(self._rv, kind, "DELETED", obj, stored))
            return _copy(obj)

    def _write(
        self,
        kind: str,
        key: Key,
        obj: dict,
        event_type: str,
        previous: dict | None = None,
    ) -> dict:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._objects[kind][key] = obj  # from here on never changed in place
        if kind in self._indexes:
            self._reindex(kind, key, previous, obj)
        result = _copy(obj)
        self._record(WatchEvent(self._rv, kind, event_type, obj, previous))
        return result

    def _record(self, event: WatchEvent) -> None:
        kind_log = self._logs[event.kind]
        kind_log.append(event)
        assert kind_log.changed is not None
        kind_log.changed.notify_all()
        self._changed.notify_all()
        for observer in self._observers:
            observer(event)

    # -- watch -------------------------------------------------------------------------------

    def events_since(self, kind: str, resource_version: int) -> list[WatchEvent]:
        """Events of ``kind`` after ``resource_version``; ``Gone`` when the log no longer has them."""
        with self._lock:
            kind_log = self._logs[kind]
            if resource_version < kind_log.compacted:
                raise Gone(f"too old resource version: {resource_version} ({kind_log.compacted})")
            return kind_log.since(resource_version)

    def watch(
        self, kind: str, resource_version: int, *, timeout: float, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        """Yield events from ``resource_version`` on, waiting up to ``timeout`` for new ones;
        a watcher wakes for changes to its own kind only."""
        for batch in self.watch_batches(kind, resource_version, timeout=timeout, stop=stop):
            yield from batch

    def watch_batches(
        self, kind: str, resource_version: int, *, timeout: float, stop: threading.Event
    ) -> Iterator[list[WatchEvent]]:
        """``watch``, as the batches of events there were each time the watcher looked: once
        a batch is yielded the watcher has caught up (what kube-apiserver's watch handler asks
        with ``len(ch) == 0`` before it flushes)."""
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.daemon = True
        timer.start()
        changed = self._logs[kind].changed
        assert changed is not None
        try:
            last = resource_version
            while not (deadline.is_set() or stop.is_set()):
                with self._lock:
                    events = self.events_since(kind, last)
                    last = max(last, self._rv)  # every change of this kind up to here is read
                    if not events:
                        changed.wait(timeout=0.5)
                if events:
                    yield events
        finally:
            timer.cancel()

    # -- persistence -------------------------------------------------------------------------

    def dump(self) -> dict:
        with self._lock:
            return {
                "resourceVersion": self._rv,
                "objects": {kind: list(objs.values()) for kind, objs in self._objects.items()},
            }

    def load(self, state: dict) -> None:
        with self._lock:
            self.generation += 1
            self._rv = int(state["resourceVersion"])
            for kind_log in self._logs.values():
                kind_log.events.clear()
                kind_log.compacted = self._rv  # older versions are gone: relist
            for kind, items in state["objects"].items():
                self._objects[kind] = {object_key(obj): obj for obj in items}
                self._keys[kind] = sorted(self._objects[kind])
            for kind, indexes in self._indexes.items():
                for path, (value_of, _) in list(indexes.items()):
                    self.add_index(kind, path, value_of)


def _encode_continue(version: int, last: Key, namespaced: bool) -> str:
    """kube-apiserver's continue token (k8s.io/apiserver/pkg/storage/continue.go): base64 of
    ``{"v":"meta.k8s.io/v1","rv":N,"start":"<key after the last one returned>"}``."""
    start = (f"{last[0]}/{last[1]}" if namespaced else last[1]) + "\x00"
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": version, "start": start})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
