"""The simulated cluster's state on disk (``--state FILE``), kept as etcd keeps its own: a
snapshot and a write-ahead journal.

- ``FILE`` is the snapshot: every object and the resourceVersion (``Store.dump``'s format, so a
  state file from an earlier version still loads), the clock, and the simulation's progress,
  which the store does not hold: how far the scenario's arrivals have come, the autoscaler's
  node launches in flight and its ledger of scale-ups and scale-downs.
- ``FILE.journal`` gets one JSON line per change, written by a store observer before the write
  returns (before the API answers), and the simulation's progress after a round that changed
  it. A ``kill -9`` loses nothing the API acknowledged: what was written is the kernel's to
  keep. Only the snapshot is fsynced, so a machine that loses power may lose the journal's tail.
- On start the snapshot is read and the journal replayed (a torn last line, from a kill during
  a write, is left out), then a new snapshot is written and the journal starts afresh; so it
  does when the journal grows past ``compact_bytes``, and at a clean shutdown. The journal's
  first line names the snapshot it follows: after a crash between writing a snapshot and
  emptying the journal, the old lines (all in the snapshot) are not replayed.

The clock goes on while the process is down, as a real cluster's does: simulated time at a
restart is the saved simulated time plus the wall time since, at the saved speed. A scheduler
that follows the clock written into the kubeconfig therefore stays in step with a simulated
cluster that restarted under it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scheduler.clock import WallClock
from simcluster.store import Store, WatchEvent, object_key

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".journal"
COMPACT_BYTES = 64 * 1024 * 1024
# A progress record that only moves the ledger's wasted node-time is written at most this often.
PROGRESS_INTERVAL = 1.0


def journal_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + JOURNAL_SUFFIX)


@dataclass
class SavedState:
    store: dict  # Store.dump()'s shape: {"resourceVersion": int, "objects": {kind: [obj]}}
    clock: dict | None  # WallClock.describe() when the snapshot was written
    simulation: dict | None  # Simulation.progress()
    replayed: int = 0  # journal lines applied on top of the snapshot

    def clock_at(self, speed: float) -> WallClock:
        """A clock that goes on from the saved one (wall time since counts, at the saved
        speed), running at ``speed`` from now on; a wall clock when none was saved."""
        if not self.clock:
            return WallClock(speed)
        return WallClock(speed, start=WallClock.follow(self.clock).now())

    def count(self, kind: str) -> int:
        return len(self.store["objects"].get(kind) or [])


def read_state(path: str | Path) -> SavedState | None:
    """The snapshot at ``path`` with its journal replayed; None when there is no snapshot."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        snapshot = json.loads(path.read_text())
        if not isinstance(snapshot, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"--state {path} does not read ({exc}): delete it and {journal_path(path).name} to "
            "start a new cluster (make run-fresh)"
        ) from None
    objects = {
        kind: {object_key(obj): obj for obj in items}
        for kind, items in (snapshot.get("objects") or {}).items()
    }
    version = int(snapshot.get("resourceVersion") or 0)
    simulation = snapshot.get("simulation")
    replayed = 0
    for record in _journal_records(journal_path(path), snapshot.get("journal")):
        if "simulation" in record:
            simulation = record["simulation"]
            continue
        bucket = objects.setdefault(record["kind"], {})
        key = object_key(record["object"])
        if record["type"] == "DELETED":
            bucket.pop(key, None)
        else:
            bucket[key] = record["object"]
        version = max(version, int(record["rv"]))
        replayed += 1
    state = {
        "resourceVersion": version,
        "objects": {kind: list(items.values()) for kind, items in objects.items()},
    }
    return SavedState(state, snapshot.get("clock"), simulation, replayed)


def _journal_records(path: Path, generation: str | None):  # noqa: ANN202 - a generator
    if not generation or not path.is_file():
        return
    lines = path.read_bytes().split(b"\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = {}
    if header.get("follows") != generation:
        return  # lines of an older snapshot, all in the one we read
    last = len(lines) - 1
    for number, line in enumerate(lines[1:], start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError:
            where = "its last line (torn by a kill)" if number == last else f"line {number + 1}"
            log.warning("%s: %s does not read; replay stops there", path, where)
            return


def _settled(progress: dict | None) -> dict | None:
    """``progress`` without the ledger's running totals (wasted node-time and when it was last
    counted), which move every round while a launched node is empty."""
    if not progress:
        return progress
    ledger = dict(progress.get("ledger") or {})
    ledger.pop("lastObserved", None)
    ledger["scaleUps"] = [
        {k: v for k, v in r.items() if k != "wasted_seconds"} for r in ledger.get("scaleUps", [])
    ]
    return {**progress, "ledger": ledger}


class Journal:
    """Keeps ``path`` (snapshot) and ``path.journal`` current with a store and a simulation.

    ``start()`` writes a snapshot and then journals every change; ``close()`` writes a last
    snapshot. A disk that refuses a write is logged and ends the journaling (the cluster keeps
    serving; its state on disk stays at the last good snapshot and journal line).
    """

    def __init__(
        self,
        path: str | Path,
        store: Store,
        clock: WallClock,
        progress: Callable[[], dict] | None = None,
        *,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        self.path = Path(path)
        self.journal = journal_path(self.path)
        self.store, self.clock, self.progress = store, clock, progress
        self.compact_bytes = compact_bytes
        self._file = None
        self._size = 0
        self._last_progress: dict | None = progress() if progress else None
        self._progress_written_at = 0.0
        self._progress_lock = threading.Lock()
        self._attached = False
        self.snapshots = 0

    def start(self) -> Journal:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.store.locked():
            self._compact()
            if not self._attached:
                self.store.add_observer(self._on_event)
                self._attached = True
        return self

    def record_progress(self, *, force: bool = False) -> None:
        """Journal the simulation's progress if it changed (called after every round). A
        change of the ledger's running totals alone waits ``PROGRESS_INTERVAL``."""
        if self.progress is None:
            return
        with self._progress_lock:
            current = self.progress()  # takes the simulation's lock: never under the store's
            if current == self._last_progress:
                return
            now = time.monotonic()
            settled = _settled(current) == _settled(self._last_progress)
            if settled and not force and now - self._progress_written_at < PROGRESS_INTERVAL:
                return
            self._progress_written_at = now
            with self.store.locked():
                self._last_progress = current
                self._append({"simulation": current})

    def close(self) -> None:
        """A last snapshot, and no more journaling."""
        if self.progress is not None:
            current = self.progress()
            with self._progress_lock:
                self._last_progress = current
        with self.store.locked():
            if self._file is not None:
                self._compact()
                self._file.close()
                self._file = None

    # -- under the store's lock ----------------------------------------------------------------

    def _on_event(self, event: WatchEvent) -> None:
        self._append(
            {"rv": event.resource_version, "kind": event.kind, "type": event.type,
             "object": event.object}
        )  # fmt: skip

    def _append(self, record: dict) -> None:
        if self._file is None:
            return
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        try:
            self._file.write(data)
            self._file.flush()
            self._size += len(data)
            if self._size > self.compact_bytes:
                self._compact()
        except OSError as exc:
            self._give_up(exc)

    def _compact(self) -> None:
        generation = uuid.uuid4().hex
        snapshot = {
            **self.store.dump(),
            "clock": self.clock.describe(),
            "simulation": self._last_progress,
            "journal": generation,
        }
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            with temporary.open("w") as handle:
                json.dump(snapshot, handle, separators=(",", ":"))
                handle.flush()
                os.fsync(handle.fileno())
            temporary.replace(self.path)
            if self._file is not None:
                self._file.close()
            self._file = self.journal.open("wb")
            header = (json.dumps({"follows": generation}) + "\n").encode()
            self._file.write(header)
            self._file.flush()
            self._size = len(header)
            self.snapshots += 1
        except OSError as exc:
            self._give_up(exc)
            return
        log.debug("snapshot of the simulated cluster written to %s", self.path)

    def _give_up(self, exc: OSError) -> None:
        log.error("cannot keep the simulated cluster's state in %s: %s", self.path, exc)
        if self._file is not None:
            self._file.close()
        self._file = None
