"""The scheduler configuration, in Volcano's format (``volcano-scheduler.conf``), unchanged.

::

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false       # Volcano's per-extension-point switches
      - name: conformance
    - plugins:
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
        arguments: {leastrequested.weight: 1}
    configurations:                    # action arguments
    - name: enqueue
      arguments: {admissionCheck: true, retryAfter: 60}

Parsing here checks the shape; ``scheduler.registry.load`` also checks every action, plugin
and argument name against what Sluice implements. Two keys are Sluice's own, and a Volcano
scheduler ignores them: ``pipelinePersistence`` (Volcano's pipeline cache persistence design,
issue #5044; false restores the behaviour before it) and ``pipelineMargin`` (seconds a
pipeline decision may outlive its victims' grace periods). Which pods are ours is not in the
configuration: as Volcano's ``--scheduler-name``, it is the process's setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml


class ConfigError(ValueError):
    pass


# Volcano's PluginOption switches (pkg/scheduler/conf/scheduler_conf.go), spelled as Volcano
# spells them (some say "enable", some "enabled"). Unset means enabled, except
# enableHierarchy, which is off unless set (Volcano's ApplyPluginConfDefaults leaves it nil).
SWITCHES = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
OFF_BY_DEFAULT = frozenset({"enableHierarchy"})
TOP_LEVEL = (
    "actions",
    "tiers",
    "configurations",
    "metrics",
    "pipelinePersistence",
    "pipelineMargin",
)


@dataclass(frozen=True)
class PluginOption:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    switches: Mapping[str, bool] = field(default_factory=dict)  # only those set explicitly

    def enabled(self, switch: str) -> bool:
        return self.switches.get(switch, switch not in OFF_BY_DEFAULT)


@dataclass(frozen=True)
class ActionConfiguration:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerConfig:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    configurations: tuple[ActionConfiguration, ...] = ()
    # Volcano's pipeline cache persistence design: decisions persist in the cache across
    # cycles. False restores Volcano's behaviour before it, for comparison.
    pipeline_persistence: bool = True
    # Seconds a pipeline decision may outlive the grace periods of the pods it waits for,
    # before it is released (and the pod's nomination cleared): a victim that never leaves
    # must not hide its preemptor from autoscalers for good.
    pipeline_margin: float = 60.0
    # Where it was read from (a file, a ConfigMap, "default"): not part of what it says.
    source: str = field(default="", compare=False)

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        for option in self.configurations:
            if option.name == action:
                return option.arguments
        return {}

    def plugin(self, name: str) -> PluginOption | None:
        return next((p for tier in self.tiers for p in tier if p.name == name), None)

    def enqueue_arguments(self) -> EnqueueArguments:
        return EnqueueArguments.parse(self.action_arguments("enqueue"))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str = "") -> SchedulerConfig:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source or 'configuration'}: expected a mapping with actions")
        if "schedulerName" in raw:
            raise ConfigError(
                "schedulerName: not a configuration key — which pods are ours is the "
                "scheduler's own setting, as Volcano's --scheduler-name flag: set "
                "SLUICE_SCHEDULER_NAMES (or manage.py schedule --scheduler-name)"
            )
        unknown = sorted(set(raw) - set(TOP_LEVEL))
        if unknown:
            raise ConfigError(f"unknown key(s) {unknown}; known: {list(TOP_LEVEL)}")
        actions = raw.get("actions", "")
        if isinstance(actions, str):
            actions = [a.strip() for a in actions.split(",") if a.strip()]
        if not isinstance(actions, list | tuple) or not actions:
            raise ConfigError("actions: expected a comma-separated string or a non-empty list")
        tiers = raw.get("tiers") or []
        if not isinstance(tiers, list):
            raise ConfigError("tiers: expected a list of {plugins: [...]}")
        parsed_tiers = tuple(_tier(tier, i) for i, tier in enumerate(tiers))
        configurations = raw.get("configurations") or []
        if not isinstance(configurations, list):
            raise ConfigError("configurations: expected a list of {name, arguments}")
        persistence = raw.get("pipelinePersistence", True)
        if not isinstance(persistence, bool):
            raise ConfigError(f"pipelinePersistence: expected true or false, got {persistence!r}")
        margin = raw.get("pipelineMargin", 60.0)
        if (
            isinstance(margin, bool)
            or not isinstance(margin, int | float)
            or not 0 <= margin < float("inf")
        ):
            raise ConfigError(f"pipelineMargin: expected seconds >= 0, got {margin!r}")
        config = cls(
            tuple(str(a) for a in actions),
            parsed_tiers,
            tuple(_configuration(c, i) for i, c in enumerate(configurations)),
            persistence,
            float(margin),
            source,
        )
        config.enqueue_arguments()  # raises ConfigError naming a bad enqueue argument
        return config

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "") -> SchedulerConfig:
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source or 'configuration'}: not valid YAML: {exc}") from None
        return cls.from_dict(raw or {}, source=source)

    def to_dict(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "actions": ", ".join(self.actions),
            "tiers": [
                {
                    "plugins": [
                        {"name": p.name, **dict(p.switches), "arguments": dict(p.arguments)}
                        for p in tier
                    ]
                }
                for tier in self.tiers
            ],
        }
        if self.configurations:
            raw["configurations"] = [
                {"name": c.name, "arguments": dict(c.arguments)} for c in self.configurations
            ]
        if not self.pipeline_persistence:
            raw["pipelinePersistence"] = False
        if self.pipeline_margin != 60.0:
            raw["pipelineMargin"] = self.pipeline_margin
        return raw

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def with_action_arguments(self, action: str, **arguments: Any) -> SchedulerConfig:
        """A copy with ``arguments`` merged into ``action``'s configuration."""
        raw = self.to_dict()
        entries = raw.setdefault("configurations", [])
        entry = next((c for c in entries if c["name"] == action), None)
        if entry is None:
            entry = {"name": action, "arguments": {}}
            entries.append(entry)
        entry["arguments"].update(arguments)
        return SchedulerConfig.from_dict(raw, source=self.source)


def _tier(raw: Any, index: int) -> tuple[PluginOption, ...]:
    where = f"tiers[{index}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("plugins") or [], list):
        raise ConfigError(f"{where}: expected a mapping with a list of plugins")
    unknown = sorted(set(raw) - {"plugins"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; a tier holds plugins only")
    return tuple(
        _plugin(p, f"{where}.plugins[{j}]") for j, p in enumerate(raw.get("plugins") or [])
    )


def _plugin(raw: Any, where: str) -> PluginOption:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise ConfigError(f"{where}: expected a mapping with a name")
    where = f"{where} ({raw['name']})"
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfigError(f"{where}.arguments: expected a mapping")
    switches: dict[str, bool] = {}
    for key, value in raw.items():
        if key in ("name", "arguments"):
            continue
        if key not in SWITCHES:
            raise ConfigError(
                f"{where}: unknown key {key!r}; a plugin takes name, arguments and the "
                f"switches {', '.join(SWITCHES)}"
            )
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.{key}: expected true or false, got {value!r}")
        switches[key] = value
    return PluginOption(raw["name"], dict(arguments), switches)


def _configuration(raw: Any, index: int) -> ActionConfiguration:
    where = f"configurations[{index}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{where}: expected a mapping with a name")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfigError(f"{where}.arguments: expected a mapping")
    return ActionConfiguration(raw["name"], dict(arguments))


@dataclass(frozen=True)
class EnqueueArguments:
    """The enqueue action's arguments: the node-capacity admission check (Kueue KEP-3211).

    The check runs only when the scheduler is also given a capacity snapshot source; these
    arguments then decide whether it may hold workloads back, and how.
    """

    # admissionCheck: off unless asked for — Volcano has no such check, and next to an
    # autoscaler it would hold a workload that only needs a node the autoscaler can add.
    admission_check: bool = False
    retry_after_s: float = 60.0  # retryAfter: seconds before a held workload is evaluated again
    admit_unknown: bool = False  # admitUnknown: admit when the evaluator runs out of time
    max_snapshot_age_s: float | None = None  # maxSnapshotAge: older snapshots hold (Pending)

    KNOWN = ("admissionCheck", "retryAfter", "admitUnknown", "maxSnapshotAge")

    @classmethod
    def parse(cls, arguments: Mapping[str, Any]) -> EnqueueArguments:
        unknown = sorted(set(arguments) - set(cls.KNOWN))
        if unknown:
            raise ConfigError(
                f"configurations[enqueue].arguments: unknown {unknown}; known: {sorted(cls.KNOWN)}"
            )
        age = arguments.get("maxSnapshotAge")
        return cls(
            admission_check=_bool(arguments, "admissionCheck", False),
            retry_after_s=_seconds(arguments, "retryAfter", 60.0),
            admit_unknown=_bool(arguments, "admitUnknown", False),
            max_snapshot_age_s=None if age is None else _seconds(arguments, "maxSnapshotAge", 0),
        )


def _bool(arguments: Mapping[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(
            f"configurations[enqueue].arguments.{key}: expected true or false, got {value!r}"
        )
    return value


def _seconds(arguments: Mapping[str, Any], key: str, default: float) -> float:
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"configurations[enqueue].arguments.{key}: expected seconds > 0, got {value!r}"
        )
    return float(value)


class ConfigText(Protocol):
    """Where a configuration's text comes from; ``changed()`` is the new text, or None."""

    where: str

    def changed(self) -> str | None: ...


class ConfigFile:
    """A configuration file, read again whenever it changes (Volcano's ``--scheduler-conf``,
    watched for writes). A file that cannot be read raises OSError naming it, and is read
    afresh once it can be again (a file moved away and back keeps its mtime and size); one
    that is not UTF-8 is a ConfigError naming the byte."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.where = f"file {self.path}"
        self._seen: tuple[int, int] | None = None

    def changed(self) -> str | None:
        try:
            stat = self.path.stat()
        except OSError:
            self._seen = None  # whatever comes back is new
            raise
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen == self._seen:
            return None
        self._seen = seen
        data = self.path.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"not UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
            ) from None


# Sluice's defaults: Volcano's default actions plus preempt and reclaim, and the capacity
# plugin as the queue plugin (it carries the gate reservations) with its hierarchy on: queues
# form a tree under root, and root is unlimited unless its capability says otherwise. Flat (as
# Volcano's default), every queue's real capability is the cluster's current size, so a pod of
# a full cluster waits for its queue — gated — and an autoscaler never adds the node it needs.
DEFAULT_CONFIG_YAML = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
  - name: pdb
"""


def default_config() -> SchedulerConfig:
    return SchedulerConfig.from_yaml(DEFAULT_CONFIG_YAML, source="default")
