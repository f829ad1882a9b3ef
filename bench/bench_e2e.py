"""kube-scheduler's scheduler_perf "SchedulingBasic" shape through the Kubernetes API.

The simulated cluster runs in a process of its own on 127.0.0.1 (as kube-apiserver would),
with its kubelet. Its nodes and pods are POSTed to its API server, and its running pods started
by its kubelet, before anything is timed. Then, in the same run:

* the floor: a minimal client POSTs the 10,000 Bindings (``pods/binding``) over keep-alive
  connections with the scheduler's bind parallelism, timed from the first request to the last
  answer — what the API itself costs;
* end to end: ``SchedulerService`` (informers, cache, act mode, its binds sent from its bind
  process: scheduler.kube.bind_process) against a fresh cluster of the same shape, timed from
  its first cycle until the cluster has bound every pending pod.

Each figure comes with the CPU seconds each process spent over its window (the cluster's and
the bind process's from /proc, this process's from ``os.times``) and the load average: on a
shared machine the CPU the processes needed says more than the wall time they got.

Then the same at 1,000 nodes / 5,000 pending pods carrying the queue-allocation gate, with the
time from each pod's gate removal to its bind (p50/p99), as the cluster saw them.
Targets: e2e >= 680 pods/s (kube-scheduler's scheduler_perf floor for this shape), e2e time /
floor time <= 1.5, measured in each of ``PAIRS`` alternating pairs (floor, then end to end)
and judged on their median. End to end runs with the limit raised out of the way in each pair,
which is what the ratio compares with the floor (its client has no limiter), and once at
Volcano's default client-side limits (2000 QPS, burst 2000: 10,000 binds cannot take less than
4 s, whatever the scheduler and the API could do).
"""

from __future__ import annotations

import gc
import http.client
import inspect
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client

from bench import scheduler_config
from scheduler.api.labels import QUEUE_ALLOCATION_GATE

SHAPES = {"basic": (5_000, 1_000, 10_000, False), "gated": (1_000, 0, 5_000, True)}
TIMEOUT = 900.0

CONFIG_YAML = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""


def _node(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
        },
    }


def _pod(i: int, node: str | None, gated: bool) -> dict:
    spec: dict = {
        "schedulerName": "volcano",
        "containers": [
            {"name": "c", "image": "pause",
             "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}
        ],
    }  # fmt: skip
    annotations = {}
    if node:
        spec["nodeName"] = node
    elif gated:
        annotations[QUEUE_ALLOCATION_GATE] = "true"
        spec["schedulingGates"] = [{"name": QUEUE_ALLOCATION_GATE}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "annotations": annotations},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


# -- the cluster's process -------------------------------------------------------------------


def serve(nodes: int, running: int, pending: int, gated: bool) -> None:
    """Child process: the simulated cluster of this shape; answers ``stats`` on stdin."""
    from scheduler.clock import WallClock
    from simcluster.api import ApiServer, Cluster
    from simcluster.bootstrap import ensure_system_namespace
    from simcluster.runtime import Simulation
    from simcluster.store import Store

    clock = WallClock(1.0)
    store = Store(clock.now)
    ensure_system_namespace(store)
    cluster = Cluster(store, clock.now)
    ungated: dict[str, float] = {}
    bound: dict[str, float] = {}

    def observe(event) -> None:  # noqa: ANN001 - a store observer
        if event.kind != "pods" or event.type != "MODIFIED" or event.previous is None:
            return
        name = event.object["metadata"]["name"]
        before, after = event.previous.get("spec") or {}, event.object.get("spec") or {}
        if before.get("schedulingGates") and not after.get("schedulingGates"):
            ungated[name] = time.time()
        if not before.get("nodeName") and after.get("nodeName"):
            bound[name] = time.time()

    store.add_observer(observe)
    simulation = Simulation(store, clock)  # the kubelet: bound pods start, as KWOK's do
    server = ApiServer(cluster, port=0).start()
    simulation.start()
    create_through_api(server.url, nodes, running, pending, gated)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the running pods run before anything is timed
        listed, _ = store.list("pods")
        started = sum((pod.get("status") or {}).get("phase") == "Running" for pod in listed)
        if started >= running:
            break
        time.sleep(0.2)
    print(server.url, flush=True)
    for line in sys.stdin:
        if line.strip() == "stats":
            with store.locked():
                waits = [bound[n] - ungated[n] for n in bound if n in ungated]
                last = max(bound.values(), default=0.0)
                first = min(bound.values(), default=0.0)
                times = sorted(bound.values())
                deciles = [times[min(len(times) - 1, len(times) * k // 10)] for k in range(1, 11)]
                print(json.dumps({"bound": len(bound), "first": first, "last": last,
                                  "waits": waits, "deciles": deciles if times else []}),
                      flush=True)  # fmt: skip
        else:
            break
    simulation.stop()
    server.stop()


def create_through_api(url: str, nodes: int, running: int, pending: int, gated: bool) -> None:
    """The shape's namespace, queue, nodes and pods, each POSTed to the API server as a client
    would create them (16 at a time over keep-alive connections; not timed)."""
    host, port = url.removeprefix("http://").split(":")
    local = threading.local()

    def post(item: tuple[str, dict]) -> None:
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection(host, int(port))
        path, body = item
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        if answer.status != 201:
            raise RuntimeError(f"POST {path}: HTTP {answer.status}: {data[:200]!r}")

    post(("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "default"}}))  # fmt: skip
    post(("/apis/scheduling.volcano.sh/v1beta1/queues",
          {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
           "metadata": {"name": "default"}, "spec": {"weight": 1}}))  # fmt: skip
    pods = "/api/v1/namespaces/default/pods"
    items = [("/api/v1/nodes", _node(i)) for i in range(nodes)]
    items += [(pods, _pod(i, f"node-{i % nodes:05d}", False)) for i in range(running)]
    items += [(pods, _pod(i, None, gated)) for i in range(running, running + pending)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(post, items))


class Child:
    def __init__(self, shape: str) -> None:
        nodes, running, pending, gated = SHAPES[shape]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_e2e", "serve",
             str(nodes), str(running), str(pending), "1" if gated else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None and self.process.stdin is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError(f"the simulated cluster did not start: {self.url!r}")
        self._lock = threading.Lock()

    def cpu(self) -> float:
        """CPU seconds the cluster's process has used (user + system); NaN off Linux."""
        return _cpu_of(self.process.pid)

    def stats(self) -> dict:
        with self._lock:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write("stats\n")
            self.process.stdin.flush()
            return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait(30)


# -- the two clients -------------------------------------------------------------------------


def bind_workers() -> int:
    from scheduler import service

    return int(getattr(service, "DEFAULT_BIND_WORKERS", 16))


def _cpu_of(pid: int | None) -> float:
    """CPU seconds process ``pid`` has used (user + system); NaN when unknown or off Linux."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def floor(shape: str, informers: str = "") -> tuple[float, float, float]:
    """Seconds for a minimal client to POST every pending pod's Binding, and the CPU seconds
    the cluster's process and this one used meanwhile.

    ``informers`` is for ``python -m bench.bench_e2e informers`` only (never the floor the
    bench reports): "here" runs the scheduler's informers (``SchedulerService`` in observe
    mode, synced, no cycle) in this process while it posts, "apart" in another process."""
    nodes, running, pending, _ = SHAPES[shape]
    child = Child(shape)
    host, port = child.url.removeprefix("http://").split(":")
    local = threading.local()
    watching: object = None
    if informers == "here":
        from scheduler.service import SchedulerService

        api = client.ApiClient(client.Configuration(host=child.url))
        watching = SchedulerService(api, act=False).start(sync_timeout=300)
    elif informers == "apart":
        code = (f"import time; from kubernetes import client; from scheduler.service import "
                f"SchedulerService; SchedulerService(client.ApiClient(client.Configuration("
                f"host={child.url!r})), act=False).start(sync_timeout=300); print('synced', "
                f"flush=True); time.sleep(3600)")  # fmt: skip
        watching = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert watching.stdout is not None and watching.stdout.readline().strip() == "synced"

    def post(i: int) -> None:
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection(host, int(port))
        name = f"pod-{i:05d}"
        body = json.dumps({"apiVersion": "v1", "kind": "Binding",
                           "metadata": {"name": name, "namespace": "default"},
                           "target": {"kind": "Node", "name": f"node-{i % nodes:05d}"}})  # fmt: skip
        connection.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", body,
                           {"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        response.read()
        if response.status != 201:
            raise RuntimeError(f"binding {name}: HTTP {response.status}")

    try:
        server_cpu, own_cpu = child.cpu(), _own_cpu()
        started = time.time()
        with ThreadPoolExecutor(bind_workers()) as pool:
            list(pool.map(post, range(running, running + pending)))
        elapsed = time.time() - started
        server_cpu, own_cpu = child.cpu() - server_cpu, _own_cpu() - own_cpu
        assert child.stats()["bound"] == pending
        return elapsed, server_cpu, own_cpu
    finally:
        if isinstance(watching, subprocess.Popen):
            watching.kill()
            watching.wait()
        elif watching is not None:
            watching.stop()  # type: ignore[attr-defined]
        child.close()


def end_to_end(shape: str, qps: float | None = None) -> tuple[float, int, dict]:
    """Seconds from the scheduler's first cycle until the cluster bound every pending pod; the
    stats also say the CPU seconds each process used over the cycle (``server_cpu``,
    ``scheduler_cpu``) and the first cycle's duration and allocate time. ``qps``: the
    scheduler's client-side rate limit (``--kube-api-qps``, and as much burst), else
    Volcano's defaults (2000 / 2000)."""
    from scheduler.service import SchedulerService

    _, _, pending, _ = SHAPES[shape]
    child = Child(shape)
    api = client.ApiClient(client.Configuration(host=child.url))
    wanted = inspect.signature(SchedulerService).parameters
    limits = {"kube_api_qps": qps, "kube_api_burst": int(qps)} if qps else {}
    extra = {k: v for k, v in {"bind_workers": bind_workers(), **limits}.items() if k in wanted}
    service = SchedulerService(api, config=scheduler_config(CONFIG_YAML), act=True, **extra).start(
        sync_timeout=300
    )
    cycles = 0
    first: dict = {}
    try:
        gc.collect()  # what an earlier run in this process left is not this run's to collect
        binder = service.cluster.binder  # the bind process (scheduler.kube.bind_process)
        binder_pid = binder.pid if binder is not None else None
        server_cpu, own_cpu, binder_cpu = child.cpu(), _own_cpu(), _cpu_of(binder_pid)
        started = time.time()
        while time.time() - started < TIMEOUT:
            report = service.run_once()
            cycles += 1
            if not first:
                first = {"cycle": report.duration_s,
                         "allocate": report.action_durations_s.get("allocate", float("nan"))}  # fmt: skip
            if service.gate_pool is not None:
                service.gate_pool.wait_idle(60)
            service.cache.wait_for_writes(60)
            stats = child.stats()
            if stats["bound"] >= pending:
                stats.update(first, started=started, server_cpu=child.cpu() - server_cpu,
                             scheduler_cpu=_own_cpu() - own_cpu,
                             binder_cpu=_cpu_of(binder_pid) - binder_cpu)  # fmt: skip
                return stats["last"] - started, cycles, stats
        stats = child.stats()
        return float("inf"), cycles, stats
    finally:
        service.stop()
        api.close()
        child.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    nodes, running, pending, _ = SHAPES["basic"]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"SchedulingBasic through the API: {nodes} nodes, {running} running, {pending} "
          f"pending pods; {bind_workers()} binds in flight; {os.cpu_count()} CPUs, "
          f"load average {load}")  # fmt: skip
    from scheduler.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS

    # Floor and end to end in PAIRS alternating pairs, each pair's ratio measured in it: on a
    # shared machine one pair can draw a fast floor and a slow end to end (the floor's own
    # cluster CPU for the same binds varies by a fifth between runs); the median pair says it.
    ratios, slowest = [], 0.0
    for pair in range(1, PAIRS + 1):
        floor_s, server_cpu, client_cpu = floor("basic")
        print(f"pair {pair}: floor (minimal client, {pending} Bindings): {floor_s:.2f} s, "
              f"{pending / floor_s:,.0f} pods/s; CPU: cluster {server_cpu:.2f} s, "
              f"client {client_cpu:.2f} s")  # fmt: skip
        e2e_s = _basic_end_to_end(pending, UNLIMITED_QPS, f"pair {pair}: --kube-api-qps "
                                  f"{UNLIMITED_QPS:,.0f}: no client-side limit binds, as the "
                                  "floor has none")  # fmt: skip
        ratios.append(e2e_s / floor_s)
        slowest = max(slowest, e2e_s)
    limited = _basic_end_to_end(pending, None, f"at Volcano's default --kube-api-qps "
                                f"{DEFAULT_QPS:.0f} / --kube-api-burst {DEFAULT_BURST}")  # fmt: skip
    least = (pending - DEFAULT_BURST) / DEFAULT_QPS
    median = statistics.median(ratios)
    print(f"e2e / floor with the limit raised, each pair: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; median {median:.2f} (target <= 1.5: "
          f"{'met' if median <= 1.5 else 'NOT met'}); at the default limits the limiter alone "
          f"takes {least:.1f} s for {pending:,} binds; e2e target >= 680 pods/s: "
          f"{'met' if pending / max(slowest, limited) >= 680 else 'NOT met'} in every run")  # fmt: skip
    nodes, _, pending, _ = SHAPES["gated"]
    e2e_s, cycles, stats = end_to_end("gated")
    waits = stats["waits"]
    print(f"gates on, {nodes} nodes, {pending} gated pods: {e2e_s:.2f} s, "
          f"{pending / e2e_s:,.0f} pods/s, {cycles} cycles, {stats['bound']}/{pending} bound; "
          f"gate removal to bind p50 {_pct(waits, 0.5):.2f} s, p99 {_pct(waits, 0.99):.2f} s "
          f"(mean {statistics.fmean(waits) if waits else float('nan'):.2f} s)")  # fmt: skip


UNLIMITED_QPS = 100_000.0
PAIRS = 3


def _basic_end_to_end(pending: int, qps: float | None, limits: str) -> float:
    e2e_s, cycles, stats = end_to_end("basic", qps)
    print(f"end to end (SchedulerService, act, {limits}): {e2e_s:.2f} s, "
          f"{pending / e2e_s:,.0f} pods/s, {cycles} cycles, {stats['bound']}/{pending} bound; "
          f"first cycle {stats['cycle']:.2f} s (allocate {stats['allocate']:.2f} s), first bind "
          f"after {stats['first'] - stats['started']:.2f} s, the binds over the next "
          f"{stats['last'] - stats['first']:.2f} s (half bound after "
          f"{stats['deciles'][4] - stats['started']:.2f} s); CPU over the cycle: cluster "
          f"{stats['server_cpu']:.2f} s, scheduler {stats['scheduler_cpu']:.2f} s, its bind "
          f"process {stats['binder_cpu']:.2f} s")  # fmt: skip
    return e2e_s


def informers(rounds: int = 2) -> None:
    """What sharing one interpreter with the scheduler's informers costs the floor's client:
    its 10,000 Bindings alone, with the informers (watching every kind, handling the 20,000
    pod events the binds and the kubelet cause) in this process, and in a process of their
    own. Not part of ``make bench``: it explains the e2e / floor ratio."""
    pending = SHAPES["basic"][2]
    for _ in range(rounds):
        for where in ("", "here", "apart"):
            seconds, server_cpu, own_cpu = floor("basic", where)
            label = {"": "alone", "here": "informers in its process",
                     "apart": "informers in another process"}[where]  # fmt: skip
            print(f"floor client, {label}: {seconds:.2f} s, {pending / seconds:,.0f} pods/s; "
                  f"CPU: cluster {server_cpu:.2f} s, this process {own_cpu:.2f} s; load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        n, r, p, g = sys.argv[2:6]
        serve(int(n), int(r), int(p), g == "1")
    elif sys.argv[1:2] == ["informers"]:
        informers()
    else:
        main()
