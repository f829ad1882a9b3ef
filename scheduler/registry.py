"""Actions and plugins by name, and what a configuration builds from them.

The registry sits above the actions and the plugins: it is the one module that knows them
all, so nothing below it needs to import upwards. ``check`` tells a configuration that names
an unknown action or plugin apart, with the names that exist; ``plugin_tiers`` builds the
plugin instances a Session receives.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from scheduler.config import ConfigError, SchedulerConfig
from scheduler.framework.session import Session
from scheduler.plugins.base import Plugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.nodeorder import BinpackPlugin, NodeOrderPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin

Action = Callable[[Session], None]

PLUGINS: dict[str, type[Plugin]] = {
    p.name: p
    for p in (PriorityPlugin, GangPlugin, PredicatesPlugin, CapacityPlugin, NodeOrderPlugin,
              BinpackPlugin)
}  # fmt: skip

ACTIONS: dict[str, Action] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
}


def check(config: SchedulerConfig) -> SchedulerConfig:
    """``config`` if every action and plugin it names exists; else ConfigError naming it."""
    for name in config.actions:
        if name not in ACTIONS:
            raise ConfigError(f"actions: unknown action {name!r}; known: {sorted(ACTIONS)}")
    for tier in config.tiers:
        for option in tier:
            if option.name not in PLUGINS:
                raise ConfigError(
                    f"tiers: unknown plugin {option.name!r}; known: {sorted(PLUGINS)}"
                )
    for option in config.configurations:
        if option.name not in ACTIONS:
            raise ConfigError(
                f"configurations: unknown action {option.name!r}; known: {sorted(ACTIONS)}"
            )
    return config


def actions(config: SchedulerConfig) -> list[tuple[str, Action]]:
    return [(name, ACTIONS[name]) for name in config.actions]


def plugin_tiers(config: SchedulerConfig) -> list[list[Plugin]]:
    """Fresh plugin instances, tier by tier, for one session."""
    return [[PLUGINS[option.name](option.arguments) for option in tier] for tier in config.tiers]
