"""Scheduler configuration in Volcano's shape: a list of actions and tiers of plugins.

actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
  - name: nodeorder
    arguments: {leastrequested.weight: 1}
configurations:            # action arguments, as Volcano's
- name: enqueue
  arguments: {admissionCheck: true, retryAfter: 60, admitUnknown: false}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class PluginOption:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerConfig:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    scheduler_name: str = "volcano"
    configurations: tuple[PluginOption, ...] = ()  # per-action arguments
    # Volcano's pipeline cache persistence design (issue #5044): pipeline decisions persist in the cache across cycles. False restores
    # Volcano's behaviour before it (decisions end with the cycle), for comparison.
    pipeline_persistence: bool = True

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        for option in self.configurations:
            if option.name == action:
                return option.arguments
        return {}

    def enqueue_arguments(self) -> EnqueueArguments:
        return EnqueueArguments.parse(self.action_arguments("enqueue"))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SchedulerConfig:
        actions = raw.get("actions", "")
        if isinstance(actions, str):
            actions = [a.strip() for a in actions.split(",") if a.strip()]
        if not isinstance(actions, list | tuple) or not actions:
            raise ConfigError("actions: expected a comma-separated string or a non-empty list")
        tiers = []
        for i, tier in enumerate(raw.get("tiers") or []):
            plugins = (tier or {}).get("plugins") or []
            tiers.append(
                tuple(_plugin(p, f"tiers[{i}].plugins[{j}]") for j, p in enumerate(plugins))
            )
        configurations = tuple(
            _plugin(c, f"configurations[{i}]")
            for i, c in enumerate(raw.get("configurations") or [])
        )
        persistence = raw.get("pipelinePersistence", True)
        if not isinstance(persistence, bool):
            raise ConfigError(f"pipelinePersistence: expected true or false, got {persistence!r}")
        config = cls(
            tuple(actions),
            tuple(tiers),
            raw.get("schedulerName") or "volcano",
            configurations,
            persistence,
        )
        config.validate()
        return config

    @classmethod
    def from_yaml(cls, text: str) -> SchedulerConfig:
        return cls.from_dict(yaml.safe_load(text) or {})

    def validate(self) -> None:
        """What can be checked without the registry (``scheduler.registry.check`` checks the
        names): the enqueue arguments."""
        self.enqueue_arguments()  # raises ConfigError naming a bad enqueue argument

    def to_dict(self) -> dict[str, Any]:
        raw = {
            "actions": ", ".join(self.actions),
            "tiers": [
                {"plugins": [{"name": p.name, "arguments": dict(p.arguments)} for p in tier]}
                for tier in self.tiers
            ],
            "schedulerName": self.scheduler_name,
            "pipelinePersistence": self.pipeline_persistence,
        }
        if self.configurations:
            raw["configurations"] = [
                {"name": c.name, "arguments": dict(c.arguments)} for c in self.configurations
            ]
        return raw

    def with_action_arguments(self, action: str, **arguments: Any) -> SchedulerConfig:
        """A copy with ``arguments`` merged into ``action``'s configuration."""
        raw = self.to_dict()
        entries = raw.setdefault("configurations", [])
        entry = next((c for c in entries if c["name"] == action), None)
        if entry is None:
            entry = {"name": action, "arguments": {}}
            entries.append(entry)
        entry["arguments"].update(arguments)
        return SchedulerConfig.from_dict(raw)


@dataclass(frozen=True)
class EnqueueArguments:
    """The enqueue action's arguments: the node-capacity admission check (Kueue KEP-3211 (KEP PR #5042)).

    The check runs only when the scheduler is also given a capacity snapshot source; these
    arguments then decide whether it may hold workloads back, and how.
    """

    admission_check: bool = True  # admissionCheck
    retry_after_s: float = 60.0  # retryAfter: seconds before a held workload is evaluated again
    admit_unknown: bool = False  # admitUnknown: admit when the evaluator runs out of time
    max_snapshot_age_s: float | None = None  # maxSnapshotAge: older snapshots hold (Pending)

    @classmethod
    def parse(cls, arguments: Mapping[str, Any]) -> EnqueueArguments:
        known = {"admissionCheck", "retryAfter", "admitUnknown", "maxSnapshotAge"}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise ConfigError(
                f"configurations[enqueue].arguments: unknown {unknown}; known: {sorted(known)}"
            )
        age = arguments.get("maxSnapshotAge")
        return cls(
            admission_check=_bool(arguments, "admissionCheck", True),
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


def _plugin(raw: Any, where: str) -> PluginOption:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{where}: expected a mapping with a name")
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfigError(f"{where}.arguments: expected a mapping")
    return PluginOption(raw["name"], dict(arguments))


DEFAULT_CONFIG_YAML = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
  - name: nodeorder
"""


def default_config() -> SchedulerConfig:
    return SchedulerConfig.from_yaml(DEFAULT_CONFIG_YAML)
