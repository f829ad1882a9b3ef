"""List-and-watch informers that keep a handler current, as client-go's reflector does.

Each informer lists its kind (raw JSON, no model deserialisation), hands the handler the
differences against what it had, then watches from the list's resourceVersion. A watch that
ends is resumed from the last version seen; ``410 Gone`` (the version is too old) or any error
leads to a fresh list after a backoff. Deletions missed while disconnected surface on relist.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError, ReadTimeoutError

from scheduler.kube.resources import RESOURCES

log = logging.getLogger(__name__)
PAGE_SIZE = 500  # client-go's pager default


class EventHandler(Protocol):
    def on_add(self, kind: str, obj: dict) -> None: ...
    def on_update(self, kind: str, old: dict, new: dict) -> None: ...
    def on_delete(self, kind: str, obj: dict) -> None: ...


class WatchExpired(Exception):
    """The server no longer has the requested resourceVersion (HTTP 410)."""


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else meta.get("name", "")


class Informer:
    """One kind's list+watch loop, run in a thread; ``synced`` is set after the first list."""

    def __init__(
        self,
        api: client.ApiClient,
        kind: str,
        handler: EventHandler,
        *,
        stop: threading.Event,
        watch_timeout: int = 300,
        backoff: Callable[[int], float] = lambda failures: min(0.2 * 2**failures, 5.0),
        label_selector: str | None = None,
        read_timeout: float = 10.0,
    ) -> None:
        self.kind = kind
        self._list = RESOURCES[kind].list_call(api)
        self._handler = handler
        self._stop = stop
        self._watch_timeout = watch_timeout
        self._backoff = backoff
        self._selector = {"label_selector": label_selector} if label_selector else {}
        # A quiet watch times out on read and is resumed from the same version; it bounds how
        # long stop() can take even when the server sends nothing.
        self._read_timeout = read_timeout
        self._response: Any = None
        self._known: dict[str, dict] = {}
        self.synced = threading.Event()
        self.relists = 0

    def run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                version = self._relist()
                failures = 0
                while not self._stop.is_set():
                    version = self._watch(version)
            except WatchExpired:
                log.info("watch expired; relisting", extra={"object": self.kind})
            except (ApiException, HTTPError, OSError, ValueError) as exc:
                if self._stop.is_set():
                    break  # stop() closed the connection under us
                failures += 1
                log.warning("list/watch failed: %s", exc, extra={"object": self.kind})
                self._stop.wait(self._backoff(failures))

    def _list_pages(self) -> tuple[list[dict], str]:
        """The whole list, ``PAGE_SIZE`` objects a request, as client-go's pager (``limit`` /
        ``continue``): the server never builds one huge response. A continue token that expired
        meanwhile (410) falls back to one full list, as client-go does."""
        items: list[dict] = []
        token = ""
        while True:
            extra = {"_continue": token} if token else {}
            try:
                response = self._list(_preload_content=False, limit=PAGE_SIZE, **extra,
                                      **self._selector)  # fmt: skip
            except ApiException as exc:
                if exc.status != 410 or not token:
                    raise
                response = self._list(_preload_content=False, **self._selector)
                body = json.loads(response.data)
                return list(body.get("items") or []), body["metadata"]["resourceVersion"]
            body = json.loads(response.data)
            items.extend(body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue") or ""
            if not token:
                return items, body["metadata"]["resourceVersion"]

    def _relist(self) -> str:
        items, version = self._list_pages()
        self.relists += 1
        current = {object_key(obj): obj for obj in items}
        for key in sorted(set(self._known) - set(current)):
            self._handler.on_delete(self.kind, self._known.pop(key))
        for key, obj in current.items():
            self._dispatch("MODIFIED" if key in self._known else "ADDED", obj)
        self.synced.set()
        return version

    def _watch(self, version: str) -> str:
        response = self._list(
            watch=True,
            resource_version=version,
            timeout_seconds=self._watch_timeout,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=(5.0, self._read_timeout),
            **self._selector,
        )
        self._response = response
        try:
            if self._stop.is_set():  # stop() may have run before the response was published
                return version
            for event in _events(response):
                if self._stop.is_set():
                    break
                version = self._handle(event) or version
        except ReadTimeoutError:
            pass  # nothing happened for a while: resume from the same version
        finally:
            self._response = None
            # Never hand a watch connection back to the pool for reuse: when the read stopped
            # early (stop, read timeout, error) the server is still streaming on it, and the
            # next request sent over it would wait forever for a reply.
            response.close()
            response.release_conn()
        return version

    def interrupt(self) -> None:
        """Break a blocked watch read (used by stop)."""
        response = self._response
        if response is not None:
            # Closing a socket that another thread reads from may raise; that is fine here.
            with contextlib.suppress(Exception):
                response.shutdown() if hasattr(response, "shutdown") else response.close()

    def _handle(self, event: dict) -> str | None:
        kind, obj = event.get("type") or "", event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpired(obj.get("message", ""))
            raise ApiException(status=obj.get("code"), reason=obj.get("message"))
        if kind != "BOOKMARK":
            self._dispatch(kind, obj)
        return (obj.get("metadata") or {}).get("resourceVersion")

    def _dispatch(self, event_type: str, obj: dict) -> None:
        key = object_key(obj)
        if event_type == "DELETED":
            self._known.pop(key, None)
            self._handler.on_delete(self.kind, obj)
            return
        old = self._known.get(key)
        self._known[key] = obj
        if old is None:
            self._handler.on_add(self.kind, obj)
        elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
            self._handler.on_update(self.kind, old, obj)


def _events(response: Any) -> Iterator[dict]:
    """Newline-delimited JSON watch events from a streamed response."""
    pending = b""
    for chunk in response.stream(amt=64 * 1024, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)
    if pending.strip():
        yield json.loads(pending)


class InformerSet:
    """Informers for several kinds, each in a daemon thread, stopped together."""

    def __init__(
        self, api: client.ApiClient, kinds: list[str], handler: EventHandler, **kw: Any
    ) -> None:
        self.stop_event = threading.Event()
        self.informers = [Informer(api, k, handler, stop=self.stop_event, **kw) for k in kinds]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for informer in self.informers:
            thread = threading.Thread(
                target=informer.run, name=f"informer-{informer.kind}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def wait_for_sync(self, timeout: float) -> bool:
        return all(informer.synced.wait(timeout) for informer in self.informers)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every watch; wait for the threads at most ``timeout`` in all (not per thread:
        seven kinds each waiting out a request that was on its way made a stop take 35 s)."""
        self.stop_event.set()
        for informer in self.informers:
            informer.interrupt()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
