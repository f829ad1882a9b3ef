"""An experiment, as a file: a workload, a cluster and the variants to compare.

::

    name: gates on or off
    seed: 1              # every variant plays the same workload with the same object UIDs
    horizon: 600         # simulated seconds each variant runs
    step: 5              # simulated seconds between scheduling cycles
    workload:
      scenario: {...}    # a scenario file's contents (simcluster/scenarios/README.md), the
                         # cluster (nodes, nodeGroups) included; or
      trace:             # a window of the Alibaba openb trace shipped in simcluster/traces/
        skipPods: 7800
        pods: 200
        nodes: 20
        queues: 4
        timeCompression: 20
      recorded:          # or the pods Sluice's history recorded on a cluster over a window
        from: 2026-11-24T01:00:00Z
        to: 2026-11-24T02:00:00Z
        cluster: ...     # its kube-system UID; by default the latest report's cluster
    cluster:             # optional: instead of the workload's own nodes and node groups,
      connected: {}      # a copy of the connected cluster's nodes
    variants:
    - name: gates off
      gates: false
      marking: volcano   # Volcano's: a pod waiting for its queue is marked Unschedulable
      autoscaler: cluster-autoscaler
    - name: gates on
      gates: true

A variant's keys, all optional: ``gates`` (true: every pod carries the queue-allocation gate,
as a namespace opted in through the webhook gives it; false: none does), ``marking``
(``sluice``, the default, or ``volcano``), ``gateReservation``, ``reservationTimeout``
(seconds), ``pipelinePersistence``, ``admissionCheck``, ``autoscaler`` (``none``,
``cluster-autoscaler``, ``karpenter``) and ``schedulerConf`` (a scheduler configuration in
Volcano's format; the keys above are applied on top of it). ``load`` checks every key and
type and names what is wrong.

``recorded`` and ``connected`` come from the connected cluster (``dashboard/whatif/sources.py``
says what is read and the rules): ``sources.resolve`` reads them when an experiment is started
from the page or ``manage.py whatif``, and writes the pods, queues, gangs and priority
classes — and the nodes and the autoscaler's node group — into the file itself, so the
experiment exported plays the same anywhere. ``load`` wants them frozen. A recorded workload
has no cluster of its own: it needs ``cluster: {connected: ...}``.
"""

from __future__ import annotations

import copy
import csv
import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import yaml

from dashboard.whatif import sources
from scheduler import registry
from scheduler.config import ConfigError, SchedulerConfig, default_config
from simcluster.runtime import AUTOSCALERS
from simcluster.scenario import Scenario, ScenarioError, parse
from simcluster.trace import POD_CSV

MAX_PODS = 2_000  # pods per workload: an experiment must stay bounded
MAX_HORIZON = 24 * 3600.0
MAX_CYCLES = 2_000  # horizon / step, per variant
MAX_VARIANTS = 8
MAX_NODES = 1_523  # nodes per cluster, and per node group: the whole openb trace cluster's
MAX_QUEUES = 100  # a trace workload's queues
MARKINGS = ("sluice", "volcano")
TOP_KEYS = {"name", "seed", "horizon", "step", "workload", "variants", "description", "cluster"}
WORKLOADS = ("scenario", "trace", "recorded")
VARIANT_KEYS = {
    "name",
    "gates",
    "marking",
    "gateReservation",
    "reservationTimeout",
    "pipelinePersistence",
    "admissionCheck",
    "autoscaler",
    "schedulerConf",
}
TRACE_KEYS = {"skipPods", "pods", "nodes", "queues", "timeCompression", "nodeGroupMax",
              "queueShare", "cpuOnly"}  # fmt: skip


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class Variant:
    name: str
    gates: bool = True
    marking: str = "sluice"
    gate_reservation: bool | None = None
    reservation_timeout: float | None = None
    pipeline_persistence: bool | None = None
    admission_check: bool | None = None
    autoscaler: str = "cluster-autoscaler"
    scheduler_conf: str = ""

    def config(self) -> SchedulerConfig:
        """The scheduler configuration this variant runs with."""
        base = (
            SchedulerConfig.from_yaml(self.scheduler_conf, source="experiment")
            if self.scheduler_conf
            else default_config()
        )
        raw = base.to_dict()
        capacity_args: dict[str, Any] = {}
        if self.gate_reservation is not None:
            capacity_args["gateReservation"] = self.gate_reservation
        if self.reservation_timeout is not None:
            capacity_args["reservationTimeout"] = self.reservation_timeout
        if capacity_args:
            for tier in raw["tiers"]:
                for plugin in tier["plugins"]:
                    if plugin["name"] in ("capacity", "proportion"):
                        plugin["arguments"] = {**plugin.get("arguments", {}), **capacity_args}
        if self.pipeline_persistence is not None:
            raw["pipelinePersistence"] = self.pipeline_persistence
        config = SchedulerConfig.from_dict(raw, source="experiment")
        if self.admission_check is not None:
            config = config.with_action_arguments("enqueue", admissionCheck=self.admission_check)
        return config

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "gates": self.gates, "marking": self.marking,
                               "autoscaler": self.autoscaler}  # fmt: skip
        for key, value in (
            ("gateReservation", self.gate_reservation),
            ("reservationTimeout", self.reservation_timeout),
            ("pipelinePersistence", self.pipeline_persistence),
            ("admissionCheck", self.admission_check),
        ):
            if value is not None:
                out[key] = value
        if self.scheduler_conf:
            out["schedulerConf"] = self.scheduler_conf
        return out

    def describe(self) -> str:
        words = [f"gates {'on' if self.gates else 'off'}"]
        if self.marking == "volcano":
            words.append("Volcano's Unschedulable marking")
        if self.gate_reservation is False:
            words.append("no gate reservation")
        if self.reservation_timeout is not None:
            words.append(f"reservation timeout {self.reservation_timeout:g} s")
        if self.pipeline_persistence is not None:
            words.append(f"pipeline persistence {'on' if self.pipeline_persistence else 'off'}")
        if self.admission_check is not None:
            words.append(f"admission check {'on' if self.admission_check else 'off'}")
        words.append(self.autoscaler)
        if self.scheduler_conf:
            words.append("own scheduler configuration")
        return ", ".join(words)


@dataclass(frozen=True)
class Spec:
    name: str
    seed: int
    horizon: float
    step: float
    workload: dict
    variants: tuple[Variant, ...]
    description: str = ""
    raw: dict = field(default_factory=dict, compare=False)
    cluster: dict = field(default_factory=dict)  # {"connected": {...}} or {}: the workload's

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            **({"description": self.description} if self.description else {}),
            "seed": self.seed,
            "horizon": self.horizon,
            "step": self.step,
            "workload": copy.deepcopy(self.workload),
            **({"cluster": copy.deepcopy(self.cluster)} if self.cluster else {}),
            "variants": [v.to_dict() for v in self.variants],
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)

    @property
    def cycles(self) -> int:
        return int(self.horizon // self.step)

    def workload_words(self) -> str:
        return self._workload_words() + self._cluster_words()

    def _cluster_words(self) -> str:
        connected = self.cluster.get("connected")
        if not connected:
            return ""
        groups = connected.get("groups") or []
        return (
            f"; on a copy of the connected cluster's {len(connected['nodes'])} nodes"
            f"{' (' + connected['copiedAt'] + ')' if connected.get('copiedAt') else ''}, "
            f"{len(groups)} shape(s); the autoscaler adds nodes of the commonest"
        )

    def _workload_words(self) -> str:
        if "recorded" in self.workload:
            r = self.workload["recorded"]
            return (
                f"{len(r['pods'])} pods recorded on cluster {r.get('cluster') or '(unknown)'} "
                f"from {r.get('from')} to {r.get('to')}, {len(r.get('gangs') or [])} gangs, "
                f"{len(r.get('queues') or [])} queues"
            )
        if "trace" in self.workload:
            t = trace_arguments(self.workload["trace"])
            return (
                f"Alibaba openb trace pods {t['skipPods']}–{t['skipPods'] + t['pods'] - 1} "
                f"({t['timeCompression']:g}x faster) on {t['nodes']} of its nodes; queues "
                f"openb-q0…q{t['queues'] - 1} by CRC-32 of the pod name, each capped at "
                f"{t['queueShare']:.0%} of the nodes' CPU and GPUs; every pod a gang of one"
                + ("; GPU pods left out" if t["cpuOnly"] else "")
            )
        scenario = self.workload["scenario"]
        return f"scenario {scenario.get('name') or self.name}"


def trace_arguments(raw: dict) -> dict:
    """A trace workload's arguments, defaults filled in; a wrong one is a SpecError naming it
    (a number must be finite; ``cpuOnly`` a YAML boolean)."""
    cpu_only = raw.get("cpuOnly", False)
    if not isinstance(cpu_only, bool):
        raise SpecError("cpuOnly: expected true or false")
    return {
        "skipPods": _number(raw, "skipPods", "", 7800, int),
        "pods": _number(raw, "pods", "", 200, int),
        "nodes": _number(raw, "nodes", "", 20, int),
        "queues": _number(raw, "queues", "", 4, int),
        "timeCompression": _number(raw, "timeCompression", "", 20.0, float),
        "nodeGroupMax": _number(raw, "nodeGroupMax", "", 10, int),
        "queueShare": _number(raw, "queueShare", "", 0.5, float),
        "cpuOnly": cpu_only,
    }


@functools.cache
def trace_length() -> int:
    """The pods in the openb trace shipped with the simulator."""
    with open(POD_CSV, newline="") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def loads(text: str, *, source: str = "<experiment>") -> Spec:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    return load(data, source=source)


def load(data: Any, *, source: str = "<experiment>") -> Spec:
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a mapping at the top level")
    _keys(data, TOP_KEYS, source)
    name = str(data.get("name") or "experiment")
    seed = _number(data, "seed", source, 1, int)
    horizon = _number(data, "horizon", source, 600.0, float)
    step = _number(data, "step", source, 5.0, float)
    if not 0 < horizon <= MAX_HORIZON:
        raise SpecError(f"{source}: horizon: between 0 and {MAX_HORIZON:g} seconds")
    if not 1 <= step <= 60:
        raise SpecError(f"{source}: step: between 1 and 60 seconds")
    if horizon / step > MAX_CYCLES:
        raise SpecError(f"{source}: horizon / step is {horizon / step:g} cycles (at most "
                        f"{MAX_CYCLES} per variant)")  # fmt: skip
    workload = data.get("workload")
    if not isinstance(workload, dict) or len(workload) != 1 or not (set(WORKLOADS) & set(workload)):
        raise SpecError(f"{source}: workload: one of scenario, trace or recorded (a mapping)")
    cluster = _cluster(data.get("cluster"), source)
    if "recorded" in workload:
        recorded = workload["recorded"]
        if not isinstance(recorded, dict):
            raise SpecError(f"{source}: workload.recorded: expected a mapping")
        if "pods" not in recorded:
            raise SpecError(f"{source}: workload.recorded: the window has not been read from "
                            "Sluice's history yet (the page and manage.py whatif read it)")  # fmt: skip
        if not cluster:
            raise SpecError(f"{source}: cluster: a recorded workload has no cluster of its own; "
                            "give cluster: {connected: {}} (a copy of the connected cluster)")  # fmt: skip
        try:
            sources.check_recorded(recorded, f"{source}: workload.recorded", MAX_PODS)
        except sources.SourceError as exc:
            raise SpecError(str(exc)) from None
    elif "scenario" in workload:
        if not isinstance(workload["scenario"], dict):
            raise SpecError(f"{source}: workload.scenario: expected a mapping")
        raw_nodes = workload["scenario"].get("nodes")
        if isinstance(raw_nodes, list) and len(raw_nodes) > MAX_NODES:  # before parsing them
            raise SpecError(f"{source}: workload.scenario: nodes: {len(raw_nodes)} (at most "
                            f"{MAX_NODES})")  # fmt: skip
        try:
            scenario = parse(copy.deepcopy(workload["scenario"]), source=f"{source} workload")
        except ScenarioError as exc:
            raise SpecError(str(exc)) from None
        if scenario.pod_count() > MAX_PODS:
            raise SpecError(f"{source}: the scenario has {scenario.pod_count()} pods (at most "
                            f"{MAX_PODS})")  # fmt: skip
        _bounded(scenario, f"{source}: workload.scenario")
    else:
        if not isinstance(workload["trace"], dict):
            raise SpecError(f"{source}: workload.trace: expected a mapping")
        _keys(workload["trace"], TRACE_KEYS, f"{source} workload.trace")
        try:
            t = trace_arguments(workload["trace"])
        except SpecError as exc:
            raise SpecError(f"{source}: workload.trace.{str(exc).lstrip(': ')}") from None
        if not 1 <= t["pods"] <= MAX_PODS or not 1 <= t["nodes"] <= MAX_NODES:
            raise SpecError(f"{source}: workload.trace: pods 1..{MAX_PODS}, nodes "
                            f"1..{MAX_NODES}")  # fmt: skip
        if not 1 <= t["queues"] <= min(MAX_QUEUES, t["pods"]):
            raise SpecError(f"{source}: workload.trace.queues: 1..{MAX_QUEUES}, and at most "
                            "the pods")  # fmt: skip
        if not 1 <= t["nodeGroupMax"] <= MAX_NODES:
            raise SpecError(f"{source}: workload.trace.nodeGroupMax: 1..{MAX_NODES}")
        if not 0 <= t["skipPods"] < trace_length():
            raise SpecError(f"{source}: workload.trace.skipPods: 0..{trace_length() - 1} (the "
                            f"trace has {trace_length()} pods)")  # fmt: skip
        if t["timeCompression"] <= 0 or not 0 < t["queueShare"] <= 1:
            raise SpecError(f"{source}: workload.trace: timeCompression > 0, 0 < queueShare <= 1")
    raw_variants = data.get("variants")
    if not isinstance(raw_variants, list) or not raw_variants:
        raise SpecError(f"{source}: variants: a list of at least one variant")
    if len(raw_variants) > MAX_VARIANTS:
        raise SpecError(f"{source}: variants: at most {MAX_VARIANTS}")
    variants = tuple(_variant(v, f"{source} variants[{i}]") for i, v in enumerate(raw_variants))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise SpecError(f"{source}: variants: names must differ")
    return Spec(name, seed, horizon, step, copy.deepcopy(workload), variants,
                str(data.get("description") or ""), raw=data, cluster=cluster)  # fmt: skip


def _cluster(raw: Any, source: str) -> dict:
    """The ``cluster`` key: absent (the workload's own nodes) or ``{connected: {...}}``."""
    if raw is None:
        return {}
    if (
        not isinstance(raw, dict)
        or set(raw) != {"connected"}
        or not isinstance(raw["connected"], dict)
    ):
        raise SpecError(f"{source}: cluster: {{connected: {{...}}}} (a copy of the connected "
                        "cluster's nodes), or no cluster key for the workload's own")  # fmt: skip
    if "nodes" not in raw["connected"]:
        raise SpecError(f"{source}: cluster.connected: the nodes have not been copied from the "
                        "connected cluster yet (the page and manage.py whatif copy them)")  # fmt: skip
    try:
        sources.check_connected(raw["connected"], f"{source}: cluster.connected")
    except sources.SourceError as exc:
        raise SpecError(str(exc)) from None
    if len(raw["connected"]["nodes"]) > MAX_NODES:
        raise SpecError(f"{source}: cluster.connected.nodes: {len(raw['connected']['nodes'])} "
                        f"nodes (at most {MAX_NODES})")  # fmt: skip
    try:
        copied = sources.cluster_objects(raw["connected"], source)
    except sources.SourceError as exc:
        raise SpecError(str(exc)) from None
    _bounded(copied, f"{source}: cluster.connected")
    return copy.deepcopy(raw)


def _bounded(scenario: Scenario, where: str) -> None:
    """A cluster is held to the openb trace's: at most MAX_NODES nodes, and no node group
    may grow past MAX_NODES either."""
    if len(scenario.nodes) > MAX_NODES:
        raise SpecError(f"{where}: nodes: {len(scenario.nodes)} (at most {MAX_NODES})")
    for group in scenario.node_groups:
        if group.max_size > MAX_NODES:
            raise SpecError(f"{where}: nodeGroups: {group.name}: max {group.max_size} nodes "
                            f"(at most {MAX_NODES})")  # fmt: skip


def resolve_and_load(text: str, *, source: str = "<experiment>") -> Spec:
    """``loads``, after reading a recorded workload's window from Sluice's history and copying
    the connected cluster's nodes when the file asks for them (``sources.resolve``)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    try:
        data = sources.resolve(data, max_pods=MAX_PODS)
    except sources.SourceError as exc:
        raise SpecError(f"{source}: {exc}") from None
    spec = load(data, source=source)
    try:
        if "recorded" in spec.workload:
            sources.recorded_scenario(spec.workload["recorded"], spec.cluster["connected"], source)
        elif spec.cluster:
            sources.cluster_objects(spec.cluster["connected"], source)
    except sources.SourceError as exc:
        raise SpecError(str(exc)) from None
    return spec


def _variant(data: Any, where: str) -> Variant:
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a mapping")
    _keys(data, VARIANT_KEYS, where)
    for key in ("gates", "gateReservation", "pipelinePersistence", "admissionCheck"):
        if key in data and not isinstance(data[key], bool):
            raise SpecError(f"{where}: {key}: expected true or false")
    marking = data.get("marking", "sluice")
    if marking not in MARKINGS:
        raise SpecError(f"{where}: marking: one of {', '.join(MARKINGS)}")
    autoscaler = data.get("autoscaler", "cluster-autoscaler")
    if autoscaler not in AUTOSCALERS:
        raise SpecError(f"{where}: autoscaler: one of {', '.join(AUTOSCALERS)}")
    timeout = data.get("reservationTimeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not 0 < timeout < math.inf):  # fmt: skip
        raise SpecError(f"{where}: reservationTimeout: seconds > 0 (a finite number)")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise SpecError(f"{where}: name: expected text")
    conf = data.get("schedulerConf") or ""
    if not isinstance(conf, str):
        raise SpecError(f"{where}: schedulerConf: the configuration's text (a YAML string)")
    variant = Variant(
        name=name or where,
        gates=data.get("gates", True),
        marking=marking,
        gate_reservation=data.get("gateReservation"),
        reservation_timeout=float(timeout) if timeout is not None else None,
        pipeline_persistence=data.get("pipelinePersistence"),
        admission_check=data.get("admissionCheck"),
        autoscaler=autoscaler,
        scheduler_conf=conf,
    )
    try:
        registry.check(variant.config())  # the actions and plugins the scheduler loads
    except (ConfigError, ValueError) as exc:
        raise SpecError(f"{where}: schedulerConf: {exc}") from None
    return variant


def _keys(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; expected "
                        f"{', '.join(sorted(allowed))}")  # fmt: skip


def _number(data: dict, key: str, where: str, default: Any, kind: type) -> Any:
    """``data[key]`` (else ``default``) as ``kind``; a SpecError naming the key for anything
    but a finite number (YAML's .inf and .nan included)."""
    value = data.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise SpecError(f"{where}: {key}: expected a finite number")
    return kind(value)


def seeded_uid(seed: int, kind: str, key: str, serial: int) -> str:
    """A UID that depends only on the seed and the object: the engine breaks ties between
    equally old jobs by UID (Volcano's job order ends with it), so random UIDs would let two
    runs of one experiment order jobs differently."""
    a = zlib.crc32(f"{seed}/{kind}/{key}/{serial}".encode())
    b = zlib.crc32(f"{key}/{serial}/{kind}/{seed}".encode())
    return (
        f"{a:08x}-{b >> 16:04x}-4{b & 0xFFF:03x}-8{serial & 0xFFF:03x}-{seed & 0xFFFFFFFFFFFF:012x}"
    )
