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
    # Seed 002: pipeline decisions persist in the cache across cycles. False restores
    # Volcano's behaviour before it (decisions end with the cycle), for comparison.
    pipeline_persistence: bool = True

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
        persistence = raw.get("pipelinePersistence", True)
        if not isinstance(persistence, bool):
            raise ConfigError(f"pipelinePersistence: expected true or false, got {persistence!r}")
        config = cls(
            tuple(actions), tuple(tiers), raw.get("schedulerName") or "volcano", persistence
        )
        config.validate()
        return config

    @classmethod
    def from_yaml(cls, text: str) -> SchedulerConfig:
        return cls.from_dict(yaml.safe_load(text) or {})

    def validate(self) -> None:
        from scheduler.framework.registry import ACTIONS, PLUGINS  # registry imports plugins

        for name in self.actions:
            if name not in ACTIONS:
                raise ConfigError(f"actions: unknown action {name!r}; known: {sorted(ACTIONS)}")
        for tier in self.tiers:
            for option in tier:
                if option.name not in PLUGINS:
                    raise ConfigError(
                        f"tiers: unknown plugin {option.name!r}; known: {sorted(PLUGINS)}"
                    )

    def to_dict(self) -> dict[str, Any]:
        return {
            "actions": ", ".join(self.actions),
            "tiers": [
                {"plugins": [{"name": p.name, "arguments": dict(p.arguments)} for p in tier]}
                for tier in self.tiers
            ],
            "schedulerName": self.scheduler_name,
            "pipelinePersistence": self.pipeline_persistence,
        }


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
