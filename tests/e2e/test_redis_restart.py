"""Redis stopped and started again on the same port, under a running stack: the scheduler worker
(leader elected), the gates worker, beat and the web server (``runserver``) — real processes as
``make run`` starts them, a real redis-server without persistence (it comes back empty), SQLite
and the simulated cluster's API.

While Redis is down the scheduler's leader goes on: it binds the pods created meanwhile, lifts
gates with its own pool and stores its cycles itself (``dashboard.tasks.sending``); the web
says what is down — ``/healthz/ready`` 503 naming Redis, the banner on every page, and
``/healthz/scheduler`` 503 ``broker_unreachable`` — never a 500. Once Redis is back every process
reconnects on its own (none is restarted): the probes are 200 again, both workers record their
presence, the gates worker lifts a gate sent through Redis, beat's heartbeat is recorded, and
the scheduler sends its work through Redis again. The times are printed (README: Health).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from dashboard.health import HEARTBEAT_KEY
from dashboard.services import gate_stats
from dashboard.services.heartbeat import WORKERS_KEY
from tests.builders import GATE, body, node, pod, queue
from tests.conftest import pick_free_port, wait_until
from tests.dashboard.test_leader_failover import Bindings
from tests.e2e.celery_stack import (  # noqa: F401 - fixtures
    ROOT,
    celery,
    database,
    migrated_database,
    query,
    redis_server,
    stack_env,
    start,
    stop_all,
    wait_for,
    wait_ready,
)
from tests.simcluster.api.conftest import start_sim

PERIOD = 0.5
OUTAGE_S = 6.0


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def create(sim, name: str, gated: bool = False, selector: dict | None = None) -> None:
    gates = [GATE] if gated else []
    spec = pod(name, "500m", namespace="default", gates=gates, opt_in=gated, selector=selector)
    sim.core.create_namespaced_pod("default", body(spec))


def test_redis_restarted_every_process_reconnects_and_the_dashboard_says_it_was_down(
    tmp_path: Path,
    redis_server,  # noqa: F811
    database: Path,  # noqa: F811
) -> None:
    sim = start_sim()
    seen = Bindings()
    sim.store.add_observer(seen)
    processes = []
    try:
        for name in ("n1", "n2"):
            sim.core.create_node(body(node(name, cpu="8", ready=True)))
        sim.custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", body(queue("default"))
        )
        port = pick_free_port()
        web = f"http://127.0.0.1:{port}"
        env = stack_env(
            tmp_path, redis_server.url, database, sim.server.write_kubeconfig(tmp_path / "kc"),
            SLUICE_MODE="act", SLUICE_CYCLE_PERIOD=str(PERIOD), SLUICE_LEADER_ELECT="true",
            SLUICE_LEADER_ELECT_LEASE_DURATION="3", SLUICE_LEADER_ELECT_RENEW_DEADLINE="2",
            SLUICE_LEADER_ELECT_RETRY_PERIOD="0.5",
            SLUICE_LEADER_ELECT_RESOURCE_NAMESPACE="default",
        )  # fmt: skip
        logs = {n: tmp_path / f"{n}.log" for n in ("scheduler", "gates", "beat", "web")}
        scheduler = ["worker", "-Q", "scheduler", "--pool", "solo", "-n", "scheduler@%h"]
        gates = ["worker", "-Q", "gates,default", "--concurrency", "2", "-n", "gates@%h"]
        beat = ["beat", "--schedule", str(tmp_path / "beat-schedule")]
        processes += [
            celery(scheduler, env, logs["scheduler"]),
            celery(gates, env, logs["gates"]),
            celery(beat, env, logs["beat"]),
            start(
                [sys.executable, str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{port}",
                 "--noreload"], env, logs["web"],
            ),
        ]  # fmt: skip
        create(sim, "before")
        create(sim, "before-gated", gated=True)
        wait_until(lambda: {"before", "before-gated"} <= set(seen.bound), timeout=45)
        wait_ready(logs["gates"])
        wait_until(lambda: get(f"{web}/healthz/ready")[0] == 200, timeout=30, interval=0.2)
        wait_until(lambda: get(f"{web}/healthz/scheduler")[0] == 200, timeout=20, interval=0.2)
        assert "broker-down" not in get(f"{web}/")[1]

        # -- Redis stopped ---------------------------------------------------------------------
        redis_server.stop()
        stopped = time.monotonic()
        cycles = query(database, "SELECT count(*) FROM dashboard_cycle")[0][0]
        create(sim, "during")
        create(sim, "during-gated", gated=True)
        wait_until(lambda: {"during", "during-gated"} <= set(seen.bound), timeout=20)
        # Its cycles are stored all the same (by the leader itself).
        wait_until(
            lambda: query(database, "SELECT count(*) FROM dashboard_cycle")[0][0] >= cycles + 3,
            timeout=15,
        )
        status, text = get(f"{web}/healthz/ready")
        assert status == 503, text
        ready = json.loads(text)
        assert ready["broker"]["reachable"] is False and ready["database"]["reachable"] is True
        assert ready["message"].startswith(
            f"Redis (the Celery broker, 127.0.0.1:{redis_server.port})"
        )
        wait_until(lambda: 'id="broker-down"' in get(f"{web}/")[1], timeout=5)  # its 2 s cache
        status, page = get(f"{web}/")
        assert status == 200 and "Redis does not answer." in page
        status, text = get(f"{web}/healthz/scheduler")
        assert status == 503 and json.loads(text)["reason"] == "broker_unreachable"
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))

        # -- Redis started again, empty --------------------------------------------------------
        redis_server.start()
        started = time.monotonic()
        broker = redis_server.client()
        ready_s = wait_for(lambda: get(f"{web}/healthz/ready")[0] == 200, timeout=10)
        banner_s = wait_for(lambda: "broker-down" not in get(f"{web}/")[1], timeout=10)
        leader_s = wait_for(lambda: get(f"{web}/healthz/scheduler")[0] == 200, timeout=20)
        workers_s = wait_for(lambda: broker.hlen(WORKERS_KEY) == 2, timeout=40)
        # A gate removal sent through Redis and run by the gates worker (the counters start
        # again at zero): its queue has room and no node its selector names, so its gate is
        # lifted by the gates worker, not by a bind.
        create(sim, "after-gated", gated=True, selector={"pool": "none-yet"})

        def gates_worker_ran() -> bool:
            counts = {k: int(v) for k, v in broker.hgetall(gate_stats.KEY).items()}
            lifted = not sim.core.read_namespaced_pod(
                "after-gated", "default"
            ).spec.scheduling_gates
            return lifted and counts.get("removed", 0) >= 1

        gates_s = wait_for(gates_worker_ran, timeout=30)
        beat_s = wait_for(lambda: broker.exists(HEARTBEAT_KEY), timeout=30)
        total = time.monotonic() - started
        assert all(p.poll() is None for p in processes)  # nothing was restarted
        assert "broker reachable again" in logs["scheduler"].read_text()
        with seen.lock:
            twice = {name: nodes for name, nodes in seen.bound.items() if len(nodes) > 1}
        assert twice == {}
        print(
            f"Redis down {OUTAGE_S:g} s; after its start: ready probe {ready_s:.1f} s, banner "
            f"{banner_s:.1f} s, /healthz/scheduler {leader_s:.1f} s, both workers present "
            f"{workers_s:.1f} s, a gate removal run by the gates worker {gates_s:.1f} s, beat's "
            f"heartbeat {beat_s:.1f} s (all within {total:.1f} s)"
        )
    finally:
        stop_all(processes)
        sim.api_client.close()
        sim.server.stop()
