"""Objects Sluice cannot use: what the cache refused, why, and whether it was said.

A watch event whose object does not parse — a quantity that is not one (``"abc"``), is negative
(``"-1Gi"``) or is too large to count (``cpu: 1e400``), a priority that is not an integer, a
queue whose ``spec.parent`` closes a cycle — must stop neither an informer nor a cycle, and must
not vanish either. The cache leaves such an object out (its earlier version too: what the
object now says cannot be read) and keeps it here with the field and the reason, until the
object is fixed or deleted.

Every cycle lists what is here (``scheduler.framework.invalid_objects``) and writes each
problem on its object once: a Kubernetes event and, on a pod, a ``PodScheduled`` condition.
A later version of the object with the same problem (our own condition patch makes one; a node
posts its status every few seconds) is not reported again; a different problem is.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The informers' kinds (plural, as watched) and what a message calls one of them.
SINGULAR = {
    "pods": "pod",
    "nodes": "node",
    "queues": "queue",
    "podgroups": "podgroup",
    "priorityclasses": "priorityclass",
}
_FIELD = re.compile(r"[A-Za-z][\w.\[\]*/-]*\.[\w.\[\]*/-]+")


@dataclass
class RefusedObject:
    kind: str  # plural, as watched: pods, nodes, queues, podgroups, priorityclasses
    namespace: str
    name: str
    uid: str
    field: str  # the path of the value Sluice cannot use ("" when the error names none)
    message: str  # the problem, field first, without the object's name
    obj: Mapping[str, Any]  # the latest version seen
    reported: bool = False  # written on the object (event, condition) for this problem

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def description(self) -> str:
        return f"{SINGULAR.get(self.kind, self.kind)} {self.key}"


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name") or "")


def problem_of(kind: str, obj: Mapping[str, Any], error: BaseException) -> tuple[str, str]:
    """(field, message) for ``error``, raised while reading ``obj``; the message drops the
    object's name the errors start with (the event and the condition sit on the object)."""
    text = str(error)
    meta = obj.get("metadata") or {}
    named = getattr(error, "obj", None) or _described(kind, meta)
    for prefix in (f"{named}: ", f"{_described(kind, meta)}: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    if not isinstance(error, ValueError):  # malformed beyond what the readers check
        text = f"cannot be read: {type(error).__name__}: {text}"
    field = getattr(error, "field", None)
    if not isinstance(field, str):
        match = _FIELD.match(text)
        field = match.group(0) if match else ""
    return field, text


def _described(kind: str, meta: Mapping[str, Any]) -> str:
    namespace, name = meta.get("namespace"), meta.get("name", "?")
    singular = SINGULAR.get(kind, kind)
    return f"{singular} {namespace}/{name}" if namespace else f"{singular} {name}"


class InvalidObjects:
    """The objects the cache refused, by kind and key; safe across informer threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], RefusedObject] = {}

    def note(self, kind: str, obj: Mapping[str, Any], error: BaseException) -> RefusedObject | None:
        """Keep ``obj`` as refused; the entry when its problem is new (to log), else None."""
        field, message = problem_of(kind, obj, error)
        meta = obj.get("metadata") or {}
        entry = RefusedObject(
            kind,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
            field,
            message,
            obj,
        )
        with self._lock:
            old = self._by_key.get((kind, entry.key))
            if old is not None and old.uid == entry.uid and old.message == message:
                old.obj = obj  # the same problem on a newer version: said once already
                return None
            self._by_key[(kind, entry.key)] = entry
            return entry

    def forget(self, kind: str, obj: Mapping[str, Any]) -> None:
        """``obj`` was fixed (the cache took it) or deleted."""
        with self._lock:
            self._by_key.pop((kind, object_key(obj)), None)

    def get(self, kind: str, key: str) -> RefusedObject | None:
        with self._lock:
            return self._by_key.get((kind, key))

    def entries(self) -> list[RefusedObject]:
        with self._lock:
            return sorted(self._by_key.values(), key=lambda e: (e.kind, e.key))

    def mark_reported(self, entry: RefusedObject) -> None:
        """The problem was written on the object: not again, unless it changes."""
        with self._lock:
            current = self._by_key.get((entry.kind, entry.key))
            if current is not None and current.message == entry.message:
                current.reported = True

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)
