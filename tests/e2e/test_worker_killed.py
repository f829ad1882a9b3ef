"""A Celery worker killed with SIGKILL in the middle of a task leaves nothing half-done and
loses nothing: the task is acknowledged only once it ran (``acks_late``) and given back to the
queue when the process running it dies (``reject_on_worker_lost``), and running it again is
harmless. Real processes: ``celery worker -Q gates,default`` as ``make run`` starts it, a real
redis-server, a SQLite database, the simulated cluster's API.

- A cycle's history, its pool process killed while its transaction waits to commit: nothing of
  it is committed, the report is delivered again at once to the next pool process and stored
  once; delivered once more, still one cycle.
- A gate removal, the whole worker (main and pool processes) killed while its PATCH is on its
  way: whether the write was lost with the worker or landed before it died, the next worker
  gets the message back once the broker's visibility timeout has passed, and the gate is lifted
  exactly once (a removal of a gate already lifted is a no-op, not an error).

Without ``acks_late`` the message is acknowledged when the task starts and dies with the worker:
the report is never stored, the gate never lifted (until the scheduler's own 30 s lapse queues
another removal).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dashboard.celery import app
from dashboard.services import gate_stats
from dashboard.tasks.gates import remove_gate
from dashboard.tasks.history import store_cycle_report
from simcluster.api.errors import ApiError
from simcluster.faults import FaultConfig, Faults
from simcluster.store import WatchEvent
from tests.builders import GATE, T0, body, cycle_report, pod, queue_report, transition
from tests.e2e.celery_stack import (  # noqa: F401 - fixtures
    celery,
    children,
    database,
    kill_group,
    migrated_database,
    query,
    redis_server,
    stack_env,
    stop_all,
    wait_for,
    wait_ready,
)
from tests.simcluster.api.conftest import start_sim

WORKER = ["worker", "-Q", "gates,default", "--concurrency", "1"]


def send(url: str, task: Any, args: tuple) -> None:
    with app.connection_for_write(url) as connection:
        task.apply_async(args, connection=connection)


def settled(server) -> bool:
    """Nothing queued, nothing delivered and not yet acknowledged."""
    client = server.client()
    return not any(client.llen(q) for q in ("default", "gates")) and not client.hlen("unacked")


def test_a_cycle_s_history_killed_before_its_commit_is_stored_once(
    tmp_path: Path,
    redis_server,  # noqa: F811
    database: Path,  # noqa: F811
) -> None:
    env = stack_env(tmp_path, redis_server.url, database)
    log = tmp_path / "worker.log"
    processes = [celery([*WORKER, "-n", "history@%h"], env, log)]
    worker = processes[0]
    report = cycle_report(
        T0,
        cluster="uid-killed",
        queues=[queue_report("research", allocated=4, running=4), queue_report("batch")],
        transitions=[transition("nb-3", node="cpu-1")],
    )
    cycles = "SELECT count(*) FROM dashboard_cycle WHERE cluster = 'uid-killed'"
    try:
        wait_ready(log)
        # A reader holds the database (a page being read): the worker's transaction writes its
        # rows, then waits for the reader to finish before it can commit.
        reader = sqlite3.connect(database, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM dashboard_cycle").fetchall()
        send(redis_server.url, store_cycle_report, (report,))
        journal = database.with_name(database.name + "-journal")
        wait_for(journal.exists, timeout=30)  # its rows are written, uncommitted
        time.sleep(0.3)
        (pool,) = children(worker.pid)
        os.kill(pool, signal.SIGKILL)
        assert reader.execute(cycles).fetchone() == (0,)  # nothing committed
        reader.execute("ROLLBACK")
        reader.close()

        took = wait_for(lambda: query(database, cycles) == [(1,)], timeout=30)
        wait_for(lambda: settled(redis_server), timeout=10)
        assert worker.poll() is None  # the worker lives on, with a new pool process
        assert "SIGKILL" in log.read_text()

        # Delivered once more (the broker delivers at least once): still one cycle.
        send(redis_server.url, store_cycle_report, (report,))
        time.sleep(0.5)
        wait_for(lambda: settled(redis_server), timeout=10)
        assert query(database, cycles) == [(1,)]
        (cycle_id,) = query(database, "SELECT id FROM dashboard_cycle")[0]
        samples = "SELECT queue FROM dashboard_queuesample WHERE cycle_id = ? ORDER BY queue"
        assert query(database, samples, cycle_id) == [("batch",), ("research",)]
        transitions = "SELECT name FROM dashboard_podtransition WHERE cycle_id = ?"
        assert query(database, transitions, cycle_id) == [("nb-3",)]
        print(f"stored {took:.2f} s after its pool process was killed")
    finally:
        stop_all(processes)


class HeldPatch(Faults):
    """The API server holds the first PATCH of one pod until the test releases it, then applies
    it (``apply``) or drops it (the worker died before its write was applied); every other
    request is served as usual."""

    def __init__(self, path: str, apply: bool) -> None:
        super().__init__(FaultConfig())
        self.path = path
        self.apply = apply
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.patches = 0

    def serve(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        answer: Callable[[], tuple[int, Any]],
        body: bytes = b"",
    ) -> tuple[int, Any]:
        if method != "PATCH" or path != self.path:
            return answer()
        self.patches += 1
        if self.patches > 1:
            return answer()
        self.arrived.set()
        self.release.wait(timeout=30)
        if self.apply:
            return answer()
        raise ApiError(503, "the worker died before this write was applied (test)")


class GateLifts:
    """How many times the store saw the queue-allocation gate lifted from a pod."""

    def __init__(self) -> None:
        self.lifted: list[str] = []

    def __call__(self, event: WatchEvent) -> None:
        if event.kind != "pods" or event.type != "MODIFIED":
            return
        before = [
            g["name"] for g in (event.previous or {}).get("spec", {}).get("schedulingGates") or []
        ]
        after = [g["name"] for g in event.object.get("spec", {}).get("schedulingGates") or []]
        if GATE in before and GATE not in after:
            self.lifted.append(event.object["metadata"]["name"])


@pytest.mark.parametrize("write", ["lost", "applied"])
def test_a_gate_removal_whose_worker_is_killed_lifts_the_gate_exactly_once(
    tmp_path: Path,
    redis_server,  # noqa: F811
    database: Path,  # noqa: F811
    write: str,
) -> None:
    sim = start_sim()
    lifts = GateLifts()
    sim.store.add_observer(lifts)
    processes = []
    try:
        created = sim.core.create_namespaced_pod(
            "default", body(pod("gated", namespace="default", gates=[GATE], opt_in=True))
        )
        held = HeldPatch("/api/v1/namespaces/default/pods/gated", apply=write == "applied")
        sim.server.faults = held
        kubeconfig = sim.server.write_kubeconfig(tmp_path / "kubeconfig")
        env = stack_env(
            tmp_path, redis_server.url, database, kubeconfig,
            SLUICE_BROKER_VISIBILITY_TIMEOUT="2", SLUICE_BROKER_RESTORE_INTERVAL="0.5",
        )  # fmt: skip
        first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
        first = celery([*WORKER, "-n", "first@%h"], env, first_log)
        processes.append(first)
        wait_ready(first_log)
        send(redis_server.url, remove_gate, ("default", "gated", created.metadata.uid, None))
        assert held.arrived.wait(timeout=30)  # the worker's PATCH is on its way
        kill_group(first)  # main and pool processes: nothing runs its shutdown
        killed = time.monotonic()
        held.release.set()

        second = celery([*WORKER, "-n", "second@%h"], env, second_log)
        processes.append(second)
        wait_for(lambda: gate_stats_in(redis_server) and settled(redis_server), timeout=40)
        took = time.monotonic() - killed

        spec = sim.core.read_namespaced_pod("gated", "default").spec
        assert not spec.scheduling_gates
        assert lifts.lifted == ["gated"]  # lifted once
        counts = {k: v for k, v in gate_stats_in(redis_server).items() if v}
        # A message older than the visibility timeout is delivered again even while a worker
        # runs it (2 s here, on a loaded machine): each extra run finds the gate gone and does
        # nothing, never an error.
        noops = counts.pop("already_ungated", 0)
        if write == "lost":
            assert held.patches == 2  # the dead worker's, dropped; the second worker's
            assert counts == {"removed": 1}
        else:
            assert held.patches == 1  # the second worker found the gate gone: no write
            assert counts == {} and noops >= 1
        print(f"gate lifted {took:.2f} s after the worker was killed (write {write})")
    finally:
        stop_all(processes)
        sim.api_client.close()
        sim.server.stop()


def gate_stats_in(server) -> dict[str, int]:
    raw = server.client().hgetall(gate_stats.KEY)
    return {name: int(value) for name, value in raw.items()}
