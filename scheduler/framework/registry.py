"""Name -> class registries for plugins and actions."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.nodeorder import BinpackPlugin, NodeOrderPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin

PLUGINS: dict[str, type] = {
    p.name: p
    for p in (PriorityPlugin, GangPlugin, PredicatesPlugin, CapacityPlugin, NodeOrderPlugin,
              BinpackPlugin)
}  # fmt: skip

ACTIONS: dict[str, Callable] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
}


def register_plugin(cls: type) -> None:
    PLUGINS[cls.name] = cls


def register_action(name: str, execute: Callable) -> None:
    ACTIONS[name] = execute
