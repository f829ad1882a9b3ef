"""Play one experiment: each variant against its own simulated cluster, in virtual time.

Each variant gets a fresh simulated cluster (``simcluster``: store, API server, kubelet,
autoscaler) on a ``VirtualClock`` and the real scheduler (``SchedulerService`` in act mode,
through the official ``kubernetes`` client and the simulated API server), as the end-to-end
tests drive them. One round: the simulation advances (arrivals, kubelet, autoscaler), the
scheduler's informers catch up, one cycle runs, its gate removals and status writes finish,
the informers catch up again; then the clock moves ``step`` seconds. Nothing sleeps: hours of
workload take as long as the cycles take.

Same seed, same result: object UIDs are derived from the seed and the object (the engine
breaks ties between equally old jobs by UID), arrivals are the workload's, and each round
waits until every write of the cycle has landed before the simulation moves on.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client

from dashboard.whatif import sources
from dashboard.whatif.spec import Spec, Variant, seeded_uid, trace_arguments
from scheduler.admission.context import Admission
from scheduler.admission.node_groups import sized_for
from scheduler.admission.source import PeriodicSnapshot, fetch_snapshot
from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.quantity import parse_resource_list
from scheduler.api.report import TransitionKind
from scheduler.clock import VirtualClock
from scheduler.service import WATCHED_KINDS, SchedulerService
from simcluster.api import ApiServer, Cluster
from simcluster.api.app import scenario_pod_creator
from simcluster.autoscaler import ScalingGroup
from simcluster.bootstrap import ensure_system_namespace
from simcluster.podutil import is_finished, meta, pod_queue, podgroup_queues
from simcluster.runtime import Simulation
from simcluster.scenario import Scenario, parse
from simcluster.store import NotFound, Store
from simcluster.trace import GPU, GPU_MODEL_LABEL, load_openb

log = logging.getLogger(__name__)
START = 1_700_000_000.0
SETTLE_TIMEOUT = 30.0


class Cancelled(Exception):
    pass


# progress(variant index, cycles done in it, cycles per variant) -> True to cancel
Progress = Callable[[int, int, int], bool]


class SeededStore(Store):
    """The simulated cluster's store, with UIDs from the experiment's seed (kube-apiserver's
    are random; here two runs must give every object the same one)."""

    def __init__(self, now: Callable[[], float], seed: int) -> None:
        super().__init__(now)
        self.seed = seed
        self._serials: Counter[str] = Counter()

    def create(self, kind: str, obj: dict) -> dict:
        obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
        m = obj["metadata"]
        if "uid" not in m:
            key = f"{m.get('namespace', '')}/{m.get('name') or m.get('generateName', '')}"
            self._serials[f"{kind}/{key}"] += 1
            m["uid"] = seeded_uid(self.seed, kind, key, self._serials[f"{kind}/{key}"])
        return super().create(kind, obj)


# -- the workload -------------------------------------------------------------------------------


def build_scenario(spec: Spec) -> Scenario:
    """The experiment's workload and cluster as a Scenario, built afresh (each variant gets
    its own objects). A copy of the connected cluster (``spec.cluster``) replaces the
    workload's own nodes and node groups (``dashboard.whatif.sources``)."""
    connected = spec.cluster.get("connected")
    if "recorded" in spec.workload:
        return sources.recorded_scenario(spec.workload["recorded"], connected, spec.name)
    if "scenario" in spec.workload:
        scenario = parse(copy.deepcopy(spec.workload["scenario"]), source=spec.name)
    else:
        scenario = trace_scenario(trace_arguments(spec.workload["trace"]))
    if connected:
        nodes = sources.cluster_objects(connected, spec.name)
        scenario.nodes, scenario.node_groups = nodes.nodes, nodes.node_groups
    return scenario


def trace_scenario(t: dict) -> Scenario:
    """A window of the Alibaba openb trace (``simcluster.trace.load_openb``: queues by CRC-32
    of the pod name, run time = deletion - creation). The trace has no jobs: every pod is a
    gang of one. ``cpuOnly`` leaves out the pods that ask for GPUs. The trace has no queue
    limits either: each queue's CPU capability is ``queueShare`` of the sampled nodes' CPU, so
    queues fill before the cluster does (and ``nvidia.com/gpu`` likewise when the
    sample has GPUs). The autoscaler's node group has the sampled nodes'
    most common shape (CPU, memory, GPUs and GPU model), up to ``nodeGroupMax`` nodes, 60 s to provision."""
    scenario = load_openb(
        skip_pods=t["skipPods"],
        max_pods=t["pods"],
        max_nodes=t["nodes"],
        queues=t["queues"],
        time_compression=t["timeCompression"],
    )
    if t["cpuOnly"]:
        for arrival in scenario.arrivals:
            arrival.pods = [p for p in arrival.pods if GPU not in _requests(p)]
        scenario.arrivals = [a for a in scenario.arrivals if a.pods]
        scenario.nodes = [_without_gpu(n) for n in scenario.nodes]
    totals: Counter[str] = Counter()
    for n in scenario.nodes:
        totals.update(parse_resource_list(n["status"]["capacity"], obj="node", field="capacity"))
    capability = {"cpu": f"{max(1, int(totals['cpu'] * t['queueShare']))}m"}
    if totals.get(GPU):  # extended resources are counted in milli-units
        capability[GPU] = f"{max(1, int(totals[GPU] * t['queueShare']))}m"
    for queue in scenario.queues:
        queue["spec"]["capability"] = dict(capability)
    shapes = Counter(_shape(n) for n in scenario.nodes)
    shape, _ = shapes.most_common(1)[0]
    capacity, labels = dict(shape[0]), dict(shape[1])
    scenario.node_groups = [
        ScalingGroup(
            "trace-pool",
            labels={"pool": "trace", **labels},
            capacity={**capacity, "pods": "110"},
            max_size=t["nodeGroupMax"],
            provision_delay=60.0,
        )
    ]
    return scenario


def _shape(node: dict) -> tuple:
    capacity = node["status"]["capacity"]
    labels = node["metadata"].get("labels") or {}
    return (
        tuple(sorted((k, v) for k, v in capacity.items() if k != "pods")),
        tuple(sorted((k, v) for k, v in labels.items() if k == GPU_MODEL_LABEL)),
    )


def _requests(pod: dict) -> dict:
    return pod["spec"]["containers"][0]["resources"].get("requests") or {}


def _without_gpu(node: dict) -> dict:
    node = copy.deepcopy(node)
    for field in ("capacity", "allocatable"):
        (node.get("status") or {}).get(field, {}).pop(GPU, None)
    return node


def apply_gates(scenario: Scenario, gates: bool) -> None:
    """Gates on: every pod opted in and gated, as the webhook gates the pods of an opted-in
    namespace. Off: no pod is."""
    for arrival in scenario.arrivals:
        for pod in arrival.pods:
            annotations = pod["metadata"].setdefault("annotations", {})
            spec_gates = [
                g
                for g in pod["spec"].get("schedulingGates") or []
                if g.get("name") != QUEUE_ALLOCATION_GATE
            ]
            if gates:
                annotations[QUEUE_ALLOCATION_GATE] = "true"
                spec_gates.append({"name": QUEUE_ALLOCATION_GATE})
            else:
                annotations.pop(QUEUE_ALLOCATION_GATE, None)
            pod["spec"]["schedulingGates"] = spec_gates
            if not spec_gates:
                del pod["spec"]["schedulingGates"]


def mark_like_volcano(store: Store) -> int:
    """Volcano's marking, for comparison: Volcano writes ``PodScheduled=False`` reason
    ``Unschedulable`` on every pod it did not place, a pod that waits for its queue included
    (pkg/scheduler/framework/job_updater.go, via ``TaskSchedulingReason``); Sluice writes
    ``SchedulingSkipped`` there. After each cycle this rewrites Sluice's ``SchedulingSkipped``
    on ungated pending pods to what Volcano would have written, before the autoscaler looks."""
    changed = 0
    for pod in store.peek_all("pods"):  # read only; the rewrite goes through mutate
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") or spec.get("schedulingGates") or is_finished(pod):
            continue
        if meta(pod).get("deletionTimestamp"):
            continue
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("reason") == (
                "SchedulingSkipped"
            ):

                def volcano(obj: dict) -> None:
                    for c in obj["status"]["conditions"]:
                        if c.get("type") == "PodScheduled":
                            c["reason"] = "Unschedulable"

                with contextlib.suppress(NotFound):
                    store.mutate("pods", meta(pod)["namespace"], meta(pod)["name"], volcano)
                    changed += 1
    return changed


# -- one variant --------------------------------------------------------------------------------


@dataclass
class PodSeen:
    namespace: str
    name: str
    uid: str
    queue: str
    created: float
    bound: float | None = None
    node: str = ""
    finished: float | None = None
    deleted: float | None = None
    evicted: int = 0

    def to_dict(self) -> dict:
        wait = None if self.bound is None else round(self.bound - self.created, 3)
        return {
            "namespace": self.namespace,
            "name": self.name,
            "queue": self.queue,
            "created": round(self.created, 3),
            "bound": None if self.bound is None else round(self.bound, 3),
            "node": self.node,
            "finished": None if self.finished is None else round(self.finished, 3),
            "deleted": None if self.deleted is None else round(self.deleted, 3),
            "evicted": self.evicted,
            "wait": wait,
        }


def run_variant(
    spec: Spec, variant: Variant, *, on_cycle: Callable[[int], bool] | None = None
) -> dict:
    """Play ``variant`` for ``spec.horizon`` simulated seconds; its results as plain data."""
    started = time.perf_counter()
    scenario = build_scenario(spec)
    apply_gates(scenario, variant.gates)
    config = variant.config()
    clock = VirtualClock(START)
    store = SeededStore(clock.now, spec.seed)
    ensure_system_namespace(store)
    for priority_class in sources.priority_classes(spec.workload):  # a recorded workload's
        store.create("priorityclasses", priority_class)
    cluster = Cluster(store, clock.now, None)
    server = ApiServer(cluster, port=0).start()
    api = client.ApiClient(client.Configuration(host=server.url))
    service: SchedulerService | None = None
    try:
        sim = Simulation(
            store,
            clock,
            create_pod=scenario_pod_creator(cluster),
            autoscaler=variant.autoscaler,
            scenario=scenario,
        )
        sim.install(clock.now())
        service = SchedulerService(api, config=config, act=True, clock=clock.now).start(
            sync_timeout=SETTLE_TIMEOUT
        )
        if config.enqueue_arguments().admission_check:
            snapshots = PeriodicSnapshot(lambda now: fetch_snapshot(api, now), clock.now)
            groups = [g.for_admission() for g in scenario.node_groups]
            service.admission = Admission.for_config(
                config,
                snapshots,
                node_groups=(lambda snap: sized_for(snap, groups)) if groups else None,
            )
        pods: dict[str, PodSeen] = {}
        samples: list[dict] = []
        evictions: list[dict] = []
        marked = 0
        for cycle in range(spec.cycles):
            if on_cycle is not None and on_cycle(cycle):
                raise Cancelled()
            now = clock.now()
            sim.step(now)
            _settle(service, store)
            report = service.run_once()
            service.gate_pool.wait_idle(SETTLE_TIMEOUT)
            service.cache.wait_for_writes(SETTLE_TIMEOUT)
            if variant.marking == "volcano":
                marked += mark_like_volcano(store)
            _settle(service, store)
            for t in report.transitions:
                if t.kind == TransitionKind.EVICTED:
                    evictions.append({"t": round(now - START, 3), "namespace": t.namespace,
                                      "name": t.name, "queue": t.queue})  # fmt: skip
            _observe_pods(store, pods, now - START)
            for e in evictions:
                if e["t"] == round(now - START, 3):
                    seen = next((p for p in pods.values() if (p.namespace, p.name) ==
                                 (e["namespace"], e["name"])), None)  # fmt: skip
                    if seen is not None:
                        seen.evicted += 1
            samples.append(_sample(store, report, now - START))
            clock.advance(spec.step)
        end = clock.now()
        sim.ledger.observe(store, end)
        _never_created(scenario, store, pods)
        return _results(spec, variant, sim, pods, samples, evictions, end, marked, started)
    finally:
        if service is not None:
            service.stop()
        api.close()
        server.stop()


def _settle(service: SchedulerService, store: Store) -> None:
    """Wait until each kind's watch has delivered that kind's latest change (as the end-to-end
    harness does)."""
    targets = {kind: store.latest_version([kind]) for kind in WATCHED_KINDS}
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not all(service.feeder.versions.get(k, 0) >= v for k, v in targets.items()):
        if time.monotonic() > deadline:
            raise RuntimeError("the scheduler's informers did not catch up with the cluster")
        time.sleep(0.002)


def _observe_pods(store: Store, pods: dict[str, PodSeen], t: float) -> None:
    groups = podgroup_queues(store)
    present = set()
    for pod in store.peek_all("pods"):  # read only
        m = meta(pod)
        if m.get("namespace") == "kube-system":
            continue
        uid = m.get("uid", "")
        present.add(uid)
        seen = pods.get(uid)
        if seen is None:
            seen = pods[uid] = PodSeen(m["namespace"], m["name"], uid, pod_queue(pod, groups), t)
        node = (pod.get("spec") or {}).get("nodeName")
        if node and seen.bound is None:
            seen.bound, seen.node = t, node
        if is_finished(pod) and seen.finished is None:
            seen.finished = t
    for uid, seen in pods.items():
        if uid not in present and seen.deleted is None:
            seen.deleted = t


def _never_created(scenario: Scenario, store: Store, pods: dict[str, PodSeen]) -> None:
    """The workload's pods the horizon ended before they arrived: they never ran, and the
    figures count them so (created: their arrival time, from the start)."""
    groups = podgroup_queues(store)
    for arrival in scenario.arrivals:
        for arrival_group in arrival.podgroups:
            m = meta(arrival_group)
            queue = (arrival_group.get("spec") or {}).get("queue") or ""
            groups.setdefault((m.get("namespace", ""), m.get("name", "")), queue)
    created = {(p.namespace, p.name) for p in pods.values()}
    for arrival in scenario.arrivals:
        for pod in arrival.pods:
            m = meta(pod)
            key = (m.get("namespace", ""), m.get("name", ""))
            if key not in created:
                created.add(key)
                pods[f"never-created/{key[0]}/{key[1]}"] = PodSeen(
                    key[0], key[1], "", pod_queue(pod, groups), arrival.at
                )


def _sample(store: Store, report, t: float) -> dict:
    queues = {}
    for q in report.queues:
        if q.name == "root":
            continue
        capability = q.capability.get("cpu")
        queues[q.name] = {
            "allocated": round(q.allocated.get("cpu", 0) / 1000, 3),
            "capability": None if capability is None else round(capability / 1000, 3),
        }
    return {"t": round(t, 3), "nodes": store.count("nodes"), "queues": queues}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (the value at rank ceil(q·n)), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(q * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def _waits(pods: list[dict]) -> dict:
    waits = [p["wait"] for p in pods if p["wait"] is not None]
    return {
        "pods": len(pods),
        "ran": len(waits),
        "never_ran": sum(1 for p in pods if p["bound"] is None),
        "wait_p50": percentile(waits, 0.50),
        "wait_p95": percentile(waits, 0.95),
        "wait_max": max(waits) if waits else None,
    }


def _results(
    spec: Spec,
    variant: Variant,
    sim: Simulation,
    pods: dict[str, PodSeen],
    samples: list[dict],
    evictions: list[dict],
    end: float,
    marked: int,
    started: float,
) -> dict:
    rows = sorted((p.to_dict() for p in pods.values()),
                  key=lambda p: (p["created"], p["namespace"], p["name"]))  # fmt: skip
    scale_ups = [r.to_dict() for r in sim.ledger.scale_ups]
    bought = sum(
        (r["node_removed_at"] or end) - r["node_ready_at"]
        for r in scale_ups
        if r["node_ready_at"] is not None
    )
    wasted = sum(r["wasted_seconds"] for r in scale_ups)
    for r in scale_ups:
        for key in ("time", "node_ready_at", "node_removed_at"):
            if r[key] is not None:
                r[key] = round(r[key] - START, 3)
        r["wasted_seconds"] = round(r["wasted_seconds"], 3)
    queues = sorted({p["queue"] for p in rows} | {q for s in samples for q in s["queues"]})
    by_queue = {}
    for queue in queues:
        mine = [p for p in rows if p["queue"] == queue]
        use = [
            s["queues"][queue]["allocated"] / s["queues"][queue]["capability"]
            for s in samples
            if queue in s["queues"] and s["queues"][queue]["capability"]
        ]
        by_queue[queue] = {
            **_waits(mine),
            "evictions": sum(1 for e in evictions if e["queue"] == queue),
            "utilisation": round(statistics.fmean(use), 4) if use else None,
        }
    summary = {
        **_waits(rows),
        "scale_ups": len(scale_ups),
        "false_scale_ups": sum(1 for r in scale_ups if r["false_scale_up"]),
        "landed_scale_ups": sum(1 for r in scale_ups if r["landed"]),
        "node_hours_bought": round(bought / 3600, 4),
        "node_hours_wasted": round(wasted / 3600, 4),
        "evictions": len(evictions),
        "scale_downs": len(sim.ledger.scale_downs),
        "marked_unschedulable": marked,
    }
    return {
        "name": variant.name,
        "description": variant.describe(),
        "variant": variant.to_dict(),
        "summary": summary,
        "by_queue": by_queue,
        "samples": samples,
        "pods": rows,
        "scale_ups": scale_ups,
        "evictions": evictions,
        "wall_seconds": round(time.perf_counter() - started, 3),
    }


def run(spec: Spec, progress: Progress | None = None) -> list[dict]:
    """Every variant of ``spec``, in order; ``progress`` is told each cycle and may cancel."""
    results = []
    for index, variant in enumerate(spec.variants):

        def on_cycle(cycle: int, index: int = index) -> bool:
            return bool(progress and progress(index, cycle, spec.cycles))

        results.append(run_variant(spec, variant, on_cycle=on_cycle))
        if progress is not None and progress(index, spec.cycles, spec.cycles):
            raise Cancelled()
    return results


def comparable(results: list[dict]) -> list[dict]:
    """The results without what depends on the machine (wall time): what two runs of one
    experiment must agree on."""
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in results]
