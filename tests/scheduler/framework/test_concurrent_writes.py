"""A cycle's binds and status writes go out concurrently through the cache's bounded pool, and
the cycle's report still says which failed, in order (scheduler.framework.writer)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from scheduler.api.report import TransitionKind
from scheduler.config import default_config
from scheduler.framework.writer import Writer
from scheduler.loop import run_cycle
from tests.builders import node, pod
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario


class Concurrent(RecordingClusterClient):
    """Each bind waits until ``width`` binds are in flight at once: sequential binds would
    never get there (and time out)."""

    def __init__(self, width: int, fail: set | None = None) -> None:
        super().__init__(fail=fail or set())
        self.barrier = threading.Barrier(width, timeout=5)
        self.lock = threading.Lock()

    def bind(self, pod, node_name) -> None:
        self.barrier.wait()
        with self.lock:
            super().bind(pod, node_name)


def scenario(n: int) -> Scenario:
    return Scenario(nodes=[node("n1", "64", "256Gi")],
                    pods=[pod(f"p{i}", "1", created=i) for i in range(n)])  # fmt: skip


def test_binds_are_in_flight_together_and_all_land():
    cache, client = scenario(8).cache(), Concurrent(width=4)
    cache.cycle_writes = ThreadPoolExecutor(max_workers=4)
    try:
        report = run_cycle(cache, default_config(), client, now=0.0)
    finally:
        cache.cycle_writes.shutdown()
    assert len(client.binds()) == 8
    assert [t.kind for t in report.transitions] == [TransitionKind.ALLOCATED] * 8
    assert report.errors == []


def test_a_failed_bind_replaces_its_allocation_in_place_and_the_others_stand():
    cache = scenario(4).cache()
    client = Concurrent(width=1, fail={("bind", "ns/p2")})
    cache.cycle_writes = ThreadPoolExecutor(max_workers=4)
    try:
        report = run_cycle(cache, default_config(), client, now=0.0)
    finally:
        cache.cycle_writes.shutdown()
    kinds = [(t.name, t.kind) for t in report.transitions]
    assert kinds == [("p0", TransitionKind.ALLOCATED), ("p1", TransitionKind.ALLOCATED),
                     ("p2", TransitionKind.BIND_FAILED), ("p3", TransitionKind.ALLOCATED)]  # fmt: skip
    assert [e.split(":")[0] for e in report.errors] == ["bind ns/p2 to n1"]
    assert sorted(client.binds()) == ["ns/p0", "ns/p1", "ns/p3"]


def test_an_asynchronous_write_refused_after_a_cycle_is_reported_by_the_next():
    cache = scenario(0).cache()
    cache.write_errors.append("nominate ns/p0 on n1: HTTP 500")
    report = run_cycle(cache, default_config(), RecordingClusterClient(), now=0.0)
    assert report.errors == ["nominate ns/p0 on n1: HTTP 500"]
    assert run_cycle(cache, default_config(), RecordingClusterClient(), now=1.0).errors == []


def test_a_bind_leaves_when_its_statement_commits_not_when_the_actions_are_done(monkeypatch):
    """Volcano's allocate hands a committed task to its bind workers at once: the cluster works
    on the first binds while allocate places the rest. Here the first bind must have reached
    the API before allocate commits the last pod (which waits for it, 5 s at most)."""
    cache, client = scenario(6).cache(), RecordingClusterClient()
    first_bind = threading.Event()
    bound_while_allocating: list[bool] = []
    record = client.bind

    def bind(pod, node_name) -> None:
        record(pod, node_name)
        first_bind.set()

    def bind_then_look(self, task, node_name, previous) -> None:
        send(self, task, node_name, previous)
        if task.name == "p5":  # the last pod allocate commits
            bound_while_allocating.append(first_bind.wait(5))

    send = Writer.bind
    monkeypatch.setattr(client, "bind", bind)
    monkeypatch.setattr(Writer, "bind", bind_then_look)
    cache.cycle_writes = ThreadPoolExecutor(max_workers=2)
    try:
        report = run_cycle(cache, default_config(), client, now=0.0)
    finally:
        cache.cycle_writes.shutdown()
    assert bound_while_allocating == [True]
    assert sorted(client.binds()) == [f"ns/p{i}" for i in range(6)]
    assert [t.kind for t in report.transitions] == [TransitionKind.ALLOCATED] * 6
