"""Prometheus metrics, derived from the CycleReport each scheduling cycle produces.

Where Volcano exports a metric, Sluice exports it under Volcano's name, type, unit and label
names, so a dashboard built for vc-scheduler keeps working:

- ``pkg/scheduler/metrics/metrics.go`` (Volcano, pinned commit ed72c7c8): the e2e and action
  latency histograms (milliseconds, ``prometheus.ExponentialBucketsRange`` buckets),
  ``volcano_schedule_attempts_total{result}``, ``volcano_pod_preemption_victims``,
  ``volcano_total_preemption_attempts``, ``volcano_unschedule_job_count`` and
  ``volcano_unschedule_task_count{job_id}``;
- ``pkg/scheduler/metrics/queue.go``: ``volcano_queue_{allocated,request,deserved,capacity,
  real_capacity,inqueue}_{milli_cpu,memory_bytes,scalar_resources}``, ``volcano_queue_share``,
  ``volcano_queue_weight`` and ``volcano_queue_overused``, all labelled ``queue_name`` (and
  ``resource``);
- ``pkg/controllers/metrics/queue.go`` (vc-controller-manager, from the queue's status):
  ``volcano_queue_pod_group_{inqueue,pending,running,unknown,completed}_count{queue_name}``.

What no scheduler exports is prefixed ``sluice_``: gated pods and gate-reserved resources per
queue, gate removal to bind, pipelined pods and released nominations, false-admission risks.

Several processes are involved (the scheduler workers, of which one leads at a time, and the
web's gunicorn workers), so the figures live in Redis, not in a process: the worker that ran a
cycle adds its counters and histogram buckets there (``HINCRBYFLOAT``, so a failover or a
restart neither loses nor resets them) and replaces the gauges; any web process renders them
at ``/metrics`` (:func:`exposition`).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from scheduler.api.quantity import CPU, MEMORY, PODS, QuantityError, parse_resource_list
from scheduler.api.report import (
    COUNTED_STATES,
    CycleReport,
    PodState,
    RiskClass,
    TransitionKind,
)

log = logging.getLogger(__name__)

GAUGES_KEY = "sluice:metrics:gauges"  # JSON, replaced by each successful cycle
COUNTERS_KEY = "sluice:metrics:counters"  # hash: counters and histogram buckets, added to
LAST_CYCLE_KEY = "sluice:metrics:last-cycle"  # when the latest cycle, failed or not, started
GATE_KEY = "sluice:metrics:gate-removed:"  # + pod uid: when the cycle removed its gate
GATE_KEY_TTL_S = 6 * 3600  # a pod never bound is forgotten after this long

# Volcano's resource dimensions: CPU and memory have metrics of their own; pods and ephemeral
# storage are not scalar resources in Volcano's api.Resource.
_NOT_SCALAR = frozenset({CPU, MEMORY, PODS, "ephemeral-storage", "storage"})
# kube-scheduler's values for schedule_attempts_total's result (Volcano's help names them).
RESULTS = ("scheduled", "unschedulable", "error")
_NOT_SCHEDULED = (PodState.UNSCHEDULABLE, PodState.WAITING)  # pending, not gated nor pipelined
PODGROUP_PHASES = ("inqueue", "pending", "running", "unknown", "completed")


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """client_golang's ``prometheus.ExponentialBucketsRange``, which Volcano's histograms use."""
    factor = math.pow(high / low, 1.0 / (count - 1))
    return tuple(low * math.pow(factor, i) for i in range(count))


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # gauge | counter | histogram
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    # Label values always shown (0 until counted), so a panel has a series from the start.
    seed: tuple[tuple[str, ...], ...] = ()


def _queue_resource(stem: str, what: str, prefix: str = "volcano") -> list[Definition]:
    return [
        Definition(f"{prefix}_queue_{stem}_milli_cpu", "gauge", f"{what} CPU for one queue",
                   ("queue_name",)),
        Definition(f"{prefix}_queue_{stem}_memory_bytes", "gauge", f"{what} memory for one queue",
                   ("queue_name",)),
        Definition(f"{prefix}_queue_{stem}_scalar_resources", "gauge",
                   f"{what} scalar resources for one queue", ("queue_name", "resource")),
    ]  # fmt: skip


DEFINITIONS: tuple[Definition, ...] = (
    # Volcano, pkg/scheduler/metrics/metrics.go
    Definition(
        "volcano_e2e_scheduling_latency_milliseconds",
        "histogram",
        "Duration of a single scheduling session execution in milliseconds. It covers the "
        "entire cycle from session open, action executions to session close.",
        buckets=exponential_buckets_range(1, 5000, 20),
    ),
    Definition(
        "volcano_action_scheduling_latency_milliseconds",
        "histogram",
        "Action scheduling latency in milliseconds",
        ("action",),
        buckets=exponential_buckets_range(1, 2000, 20),
    ),
    Definition(
        "volcano_schedule_attempts_total",
        "counter",
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
        "not be scheduled, while 'error' means an internal scheduler problem.",
        ("result",),
        seed=tuple((r,) for r in RESULTS),
    ),
    Definition("volcano_pod_preemption_victims", "gauge", "Number of selected preemption victims"),
    # A counter whose name does not end in _total: exposed as client_golang does, as is.
    Definition(
        "volcano_total_preemption_attempts",
        "counter",
        "Total preemption attempts in the cluster till now",
    ),
    Definition("volcano_unschedule_job_count", "gauge", "Number of jobs could not be scheduled"),
    Definition(
        "volcano_unschedule_task_count",
        "gauge",
        "Number of tasks could not be scheduled",
        ("job_id",),
    ),
    # Volcano, pkg/scheduler/metrics/queue.go
    *_queue_resource("allocated", "Allocated"),
    *_queue_resource("request", "Request"),
    *_queue_resource("deserved", "Deserved"),
    *_queue_resource("capacity", "Capacity"),
    *_queue_resource("real_capacity", "Real capacity"),
    *_queue_resource("inqueue", "Inqueue (admitted but not yet running jobs)"),
    Definition("volcano_queue_share", "gauge", "Share for one queue", ("queue_name",)),
    Definition("volcano_queue_weight", "gauge", "Weight for one queue", ("queue_name",)),
    Definition("volcano_queue_overused", "gauge", "If one queue is overused", ("queue_name",)),
    # Volcano, pkg/controllers/metrics/queue.go
    *(
        Definition(
            f"volcano_queue_pod_group_{phase}_count",
            "gauge",
            f"The number of {phase.capitalize()} PodGroup in this queue",
            ("queue_name",),
        )
        for phase in PODGROUP_PHASES
    ),
    # Sluice's own
    Definition(
        "sluice_queue_pods",
        "gauge",
        "Pods of the queue's own jobs by state (running, gated, unschedulable, waiting, pipelined)",
        ("queue_name", "state"),
    ),
    Definition(
        "sluice_queue_gated_pods",
        "gauge",
        "Pods that still carry the queue-allocation gate (waiting for queue capacity)",
        ("queue_name",),
    ),
    Definition(
        "sluice_queue_pipelined_pods",
        "gauge",
        "Pods nominated to a node where resources are being released",
        ("queue_name",),
    ),
    *_queue_resource("gate_reserved", "Reserved by pods whose gate was removed,", "sluice"),
    Definition(
        "sluice_admission_risk_workloads",
        "gauge",
        "Workloads by false-admission risk class (node-capacity admission check)",
        ("queue_name", "risk"),
    ),
    Definition(
        "sluice_gate_removal_to_bind_seconds",
        "histogram",
        "Time from the cycle that removed a pod's queue-allocation gate to the cycle that bound "
        "it, in seconds of the cluster's clock",
        buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
    ),
    Definition("sluice_pods_pipelined_total", "counter", "Pods pipelined onto a node"),
    Definition(
        "sluice_nominations_released_total",
        "counter",
        "Pipelined pods whose nomination was released (status.nominatedNodeName cleared)",
    ),
    Definition(
        "sluice_cycles_total",
        "counter",
        "Scheduling cycles run, by result",
        ("result",),
        seed=(("succeeded",), ("failed",)),
    ),
    Definition(
        "sluice_last_cycle_timestamp_seconds",
        "gauge",
        "When the latest scheduling cycle started, in seconds since the epoch",
    ),
)
BY_NAME = {d.name: d for d in DEFINITIONS}

Labels = tuple[str, ...]


class CycleMetrics:
    """What one report adds to the counters and histograms, and the gauges it sets."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()  # field of COUNTERS_KEY -> amount
        self.gauges: dict[str, dict[Labels, float]] = {}

    def inc(self, name: str, labels: Labels = (), amount: float = 1.0) -> None:
        assert BY_NAME[name].kind == "counter", name
        if amount:
            self.counters[_field(name, labels)] += amount

    def observe(self, name: str, value: float, labels: Labels = ()) -> None:
        definition = BY_NAME[name]
        assert definition.kind == "histogram", name
        for bound in definition.buckets:
            if value <= bound:
                self.counters[_field(name, labels, repr(bound))] += 1
        self.counters[_field(name, labels, "+Inf")] += 1
        self.counters[_field(name, labels, "sum")] += value

    def set(self, name: str, value: float, labels: Labels = ()) -> None:
        assert BY_NAME[name].kind == "gauge", name
        self.gauges.setdefault(name, {})[labels] = float(value)

    def add(self, name: str, value: float, labels: Labels = ()) -> None:
        series = self.gauges.setdefault(name, {})
        series[labels] = series.get(labels, 0.0) + float(value)


def _field(name: str, labels: Labels, bucket: str = "") -> str:
    return json.dumps([name, list(labels), bucket])


def derive(report: CycleReport, gate_removed_at: Mapping[str, float]) -> CycleMetrics:
    """The metrics of one report. ``gate_removed_at`` holds, for the pods this report binds,
    when an earlier (or this) cycle removed their gate."""
    out = CycleMetrics()
    out.observe("volcano_e2e_scheduling_latency_milliseconds", report.duration_s * 1000)
    out.inc("sluice_cycles_total", ("failed" if report.failure else "succeeded",))
    if report.failure:
        return out  # nothing else in a failed report holds
    for action, seconds in report.action_durations_s.items():
        out.observe("volcano_action_scheduling_latency_milliseconds", seconds * 1000, (action,))

    kinds = Counter(t.kind for t in report.transitions)
    unschedulable = [w for w in report.waiting if w.state is PodState.UNSCHEDULABLE]
    out.inc("volcano_schedule_attempts_total", ("scheduled",), kinds[TransitionKind.ALLOCATED])
    out.inc("volcano_schedule_attempts_total", ("unschedulable",), len(unschedulable))
    out.inc("volcano_schedule_attempts_total", ("error",), kinds[TransitionKind.BIND_FAILED])
    out.set("volcano_pod_preemption_victims", kinds[TransitionKind.EVICTED])
    out.inc("volcano_total_preemption_attempts", (), report.preemption_attempts)
    out.inc("sluice_pods_pipelined_total", (), kinds[TransitionKind.PIPELINED])
    out.inc("sluice_nominations_released_total", (), kinds[TransitionKind.UNPIPELINED])
    for t in report.transitions:
        if t.kind is TransitionKind.ALLOCATED and t.uid in gate_removed_at:
            waited = max(0.0, report.started_at - gate_removed_at[t.uid])
            out.observe("sluice_gate_removal_to_bind_seconds", waited)

    # Volcano's gang plugin: jobs with tasks that cannot be scheduled, and how many each has.
    stuck = Counter(w.job for w in report.waiting if w.state in _NOT_SCHEDULED and w.job)
    out.set("volcano_unschedule_job_count", len(stuck))
    for job, n in stuck.items():
        out.set("volcano_unschedule_task_count", n, (job,))

    for q in report.queues:
        name = (q.name,)
        _resources(out, "volcano_queue_allocated", q.name, q.allocated)
        _resources(out, "volcano_queue_request", q.name, q.request)
        _resources(out, "volcano_queue_deserved", q.name, q.deserved)
        _resources(out, "volcano_queue_real_capacity", q.name, q.capability)
        _resources(out, "volcano_queue_inqueue", q.name, q.inqueue)
        _resources(out, "sluice_queue_gate_reserved", q.name, q.reserved)
        try:
            spec = parse_resource_list(q.spec_capability, obj=f"queue {q.name}", field="capability")
        except QuantityError:
            spec = {}
        _resources(out, "volcano_queue_capacity", q.name, spec)
        out.set("volcano_queue_share", q.share, name)
        out.set("volcano_queue_weight", q.weight, name)
        out.set("volcano_queue_overused", 1.0 if q.over_deserved else 0.0, name)
        phases = {k.lower(): v for k, v in q.podgroups.items()}
        for phase in PODGROUP_PHASES:
            out.set(f"volcano_queue_pod_group_{phase}_count", phases.get(phase, 0), name)
        for state in COUNTED_STATES:
            out.set("sluice_queue_pods", q.count(state), (q.name, state.value))
        out.set("sluice_queue_gated_pods", q.count(PodState.GATED), name)
        out.set("sluice_queue_pipelined_pods", q.count(PodState.PIPELINED), name)
        for risk in RiskClass:
            out.set("sluice_admission_risk_workloads", 0, (q.name, risk.value))
    for r in report.risks:
        out.add("sluice_admission_risk_workloads", 1, (r.queue, r.risk.value))
    return out


def _resources(out: CycleMetrics, stem: str, queue: str, values: Mapping[str, float]) -> None:
    """One queue's resource vector as Volcano records it (UpdateQueueAllocated and siblings):
    CPU in millicores, memory in bytes, every other scalar resource in milli-units by name."""
    out.set(f"{stem}_milli_cpu", values.get(CPU, 0), (queue,))
    out.set(f"{stem}_memory_bytes", values.get(MEMORY, 0), (queue,))
    for resource, value in values.items():
        if resource not in _NOT_SCALAR:
            out.set(f"{stem}_scalar_resources", value, (queue, resource))


# -- the scheduler worker's side: Redis ----------------------------------------------------------


def record_cycle(client: redis.Redis, report: CycleReport) -> None:
    """Add one cycle's report to the figures in Redis; a Redis outage loses figures, never a
    cycle."""
    try:
        _record(client, report)
    except redis.RedisError as exc:
        log.warning("metrics not updated: %s", exc, extra={"object": "redis"})


def _record(client: redis.Redis, report: CycleReport) -> None:
    removed = [t.uid for t in report.transitions if t.kind is TransitionKind.GATE_REMOVED]
    bound = [t.uid for t in report.transitions if t.kind is TransitionKind.ALLOCATED]
    gate_removed_at: dict[str, float] = {}
    if removed or bound:
        with client.pipeline(transaction=False) as pipe:
            for uid in removed:  # the first removal counts; a repeated one does not restart it
                pipe.set(GATE_KEY + uid, report.started_at, nx=True, ex=GATE_KEY_TTL_S)
            for uid in bound:
                pipe.get(GATE_KEY + uid)
            answers = pipe.execute()[len(removed) :]
        gate_removed_at = {u: float(a) for u, a in zip(bound, answers, strict=True) if a}
    metrics = derive(report, gate_removed_at)
    with client.pipeline(transaction=True) as pipe:
        for uid in gate_removed_at:
            pipe.delete(GATE_KEY + uid)
        for field, amount in metrics.counters.items():
            pipe.hincrbyfloat(COUNTERS_KEY, field, amount)
        if not report.failure:  # a failed cycle knows nothing of the queues: keep theirs
            pipe.set(GAUGES_KEY, _gauges_json(metrics))
        pipe.set(LAST_CYCLE_KEY, report.started_at)
        pipe.execute()


def _gauges_json(metrics: CycleMetrics) -> str:
    return json.dumps(
        {name: [[list(k), v] for k, v in series.items()] for name, series in metrics.gauges.items()}
    )


# -- the web's side: /metrics ----------------------------------------------------------------


class StoredMetrics(Collector):
    """The figures in Redis as metric families (read once per scrape), with ``extra``
    families appended (the gate removal counters, the simulated cluster's)."""

    def __init__(self, client: redis.Redis, extra: Iterable[Metric] = ()) -> None:
        self.client = client
        self.extra = list(extra)

    def collect(self) -> Iterator[Metric]:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.get(GAUGES_KEY)
            pipe.hgetall(COUNTERS_KEY)
            pipe.get(LAST_CYCLE_KEY)
            raw_gauges, raw_counters, last_cycle = pipe.execute()
        gauges: dict[str, list[tuple[Labels, float]]] = {}
        for name, series in json.loads(raw_gauges or "{}").items():
            gauges[name] = [(tuple(labels), float(v)) for labels, v in series]
        if last_cycle is not None:
            gauges[LAST_CYCLE] = [((), float(last_cycle))]
        counters: dict[tuple[str, Labels, str], float] = {}
        for key, value in raw_counters.items():
            name, labels, bucket = json.loads(key)
            counters[(name, tuple(labels), bucket)] = float(value)
        for definition in DEFINITIONS:
            if definition.kind == "gauge":
                yield _gauge(definition, gauges.get(definition.name, []))
            elif definition.kind == "counter":
                yield _counter(definition, counters)
            else:
                yield _histogram(definition, counters)
        yield from self.extra


LAST_CYCLE = "sluice_last_cycle_timestamp_seconds"


def _gauge(d: Definition, series: Sequence[tuple[Labels, float]]) -> Metric:
    family = GaugeMetricFamily(d.name, d.help, labels=d.labels)
    for labels, value in sorted(series):
        family.add_metric(list(labels), value)
    return family


def _counter(d: Definition, counters: Mapping[tuple[str, Labels, str], float]) -> Metric:
    values = dict.fromkeys(d.seed if d.labels else [()], 0.0)
    for (name, labels, _), value in counters.items():
        if name == d.name:
            values[labels] = value
    if not d.name.endswith("_total"):
        # prometheus_client would name the sample <name>_total; client_golang keeps the name,
        # and Volcano's dashboards query it so (rate(volcano_total_preemption_attempts[5m])).
        family = Metric(d.name, d.help, "counter")
        for labels, value in sorted(values.items()):
            family.add_sample(d.name, dict(zip(d.labels, labels, strict=True)), value)
        return family
    counter = CounterMetricFamily(d.name, d.help, labels=d.labels)
    for labels, value in sorted(values.items()):
        counter.add_metric(list(labels), value)
    return counter


def _histogram(d: Definition, counters: Mapping[tuple[str, Labels, str], float]) -> Metric:
    family = HistogramMetricFamily(d.name, d.help, labels=d.labels)
    series = sorted({labels for (name, labels, _) in counters if name == d.name})
    for labels in series or ([()] if not d.labels else []):
        buckets = [
            (_le(bound), counters.get((d.name, labels, repr(bound)), 0.0)) for bound in d.buckets
        ]
        count = counters.get((d.name, labels, "+Inf"), 0.0)
        buckets.append(("+Inf", count))
        family.add_metric(list(labels), buckets, counters.get((d.name, labels, "sum"), 0.0))
    return family


def _le(bound: float) -> str:
    return repr(float(bound))


def exposition(client: redis.Redis, extra: Iterable[Metric] = ()) -> bytes:
    """The text the web's ``/metrics`` answers with (Prometheus text format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoredMetrics(client, extra))
    return generate_latest(registry)
