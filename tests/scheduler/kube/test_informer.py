"""Informers against the simulated API server, through the official client."""

from __future__ import annotations

import threading

from scheduler.kube.informer import Informer, InformerSet
from tests.builders import body, node
from tests.conftest import wait_until


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def _add(self, what: str, kind: str, obj: dict) -> None:
        with self.lock:
            self.events.append((what, kind, obj["metadata"]["name"]))

    def on_add(self, kind, obj):
        self._add("add", kind, obj)

    def on_update(self, kind, old, new):
        self._add("update", kind, new)

    def on_delete(self, kind, obj):
        self._add("delete", kind, obj)

    def names(self, what: str) -> list[str]:
        with self.lock:
            return [name for w, _, name in self.events if w == what]


def test_it_lists_then_follows_adds_updates_and_deletes(sim):
    sim.core.create_node(body(node("n1", ready=True)))
    recorder = Recorder()
    informers = InformerSet(sim.api_client, ["nodes"], recorder, read_timeout=1)
    informers.start()
    try:
        assert informers.wait_for_sync(5)
        assert recorder.names("add") == ["n1"]

        sim.core.create_node(body(node("n2", ready=True)))
        sim.core.patch_node("n1", {"metadata": {"labels": {"zone": "a"}}})
        sim.core.delete_node("n2")

        wait_until(lambda: recorder.names("delete") == ["n2"])
        assert recorder.names("add") == ["n1", "n2"]
        assert recorder.names("update") == ["n1"]
    finally:
        informers.stop()


def test_it_relists_after_410_gone_and_reports_what_it_missed(sim):
    recorder = Recorder()
    stop = threading.Event()
    informer = Informer(sim.api_client, "nodes", recorder, stop=stop, read_timeout=1)
    sim.core.create_node(body(node("old", ready=True)))
    version = informer._relist()
    # Overflow the server's short watch log (50 events) so `version` is too old to watch from.
    for i in range(60):
        sim.core.create_node(body(node(f"n{i}", ready=True)))
    sim.core.delete_node("old")
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: informer.relists >= 2 and "old" in recorder.names("delete"))
        assert len(set(recorder.names("add"))) == 61
        assert version
    finally:
        stop.set()
        informer.interrupt()
        thread.join(5)
    assert not thread.is_alive()


def test_stop_returns_promptly_even_when_nothing_happens(sim):
    informers = InformerSet(
        sim.api_client, ["nodes", "pods", "queues"], Recorder(), read_timeout=30
    )
    informers.start()
    assert informers.wait_for_sync(5)

    informers.stop(timeout=3)

    assert not any(t.is_alive() for t in informers._threads)
