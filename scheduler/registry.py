"""Actions and plugins by name, and what a configuration builds from them.

The registry sits above the actions and the plugins: it is the one module that knows them
all, so nothing below it needs to import upwards. ``check`` tells a configuration that names
an unknown action or plugin apart, with the names that exist; ``plugin_tiers`` builds the
plugin instances a Session receives.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.actions import allocate, backfill, enqueue, preempt, reclaim
from scheduler.config import ConfigError, ConfigText, SchedulerConfig
from scheduler.framework.session import Session
from scheduler.plugins.base import Plugin
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.conformance import ConformancePlugin
from scheduler.plugins.drf import DrfPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.overcommit import OvercommitPlugin
from scheduler.plugins.pdb import PdbPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin
from scheduler.plugins.proportion import ProportionPlugin

Action = Callable[[Session], None]

PLUGINS: dict[str, type[Plugin]] = {
    p.name: p
    for p in (PriorityPlugin, GangPlugin, PredicatesPlugin, CapacityPlugin, NodeOrderPlugin,
              BinpackPlugin, ProportionPlugin, DrfPlugin, ConformancePlugin, OvercommitPlugin,
              PdbPlugin)
}  # fmt: skip

ACTIONS: dict[str, Action] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
}


# Action arguments Volcano's actions read (at ed72c7c815a9fd547a787134676f73d42e9d049c) that
# Sluice accepts without implementing them: a Volcano configuration loads, with a warning.
ACTION_VOLCANO_ONLY: dict[str, frozenset[str]] = {
    "allocate": frozenset({"predicateErrorCacheEnable"}),
    "backfill": frozenset({"predicateErrorCacheEnable"}),
    "reclaim": frozenset({"predicateErrorCacheEnable"}),
    "preempt": frozenset(
        {"predicateErrorCacheEnable", "enableTopologyAwarePreemption",
         "topologyAwarePreemptWorkerNum", "minCandidateNodesPercentage",
         "minCandidateNodesAbsolute", "maxCandidateNodesAbsolute"}
    ),
    "enqueue": frozenset(),
}  # fmt: skip
# The action arguments Sluice implements (enqueue's are checked by EnqueueArguments).
ACTION_ARGUMENTS: dict[str, frozenset[str]] = {
    "enqueue": frozenset({"admissionCheck", "retryAfter", "admitUnknown", "maxSnapshotAge"}),
}


def check(config: SchedulerConfig) -> SchedulerConfig:
    """``config`` if every action, plugin and argument it names exists; else ConfigError
    naming it, with what is supported."""
    for name in config.actions:
        if name not in ACTIONS:
            raise ConfigError(f"actions: unknown action {name!r}; supported: {sorted(ACTIONS)}")
    hierarchy, proportion = False, False
    for i, tier in enumerate(config.tiers):
        for j, option in enumerate(tier):
            where = f"tiers[{i}].plugins[{j}] ({option.name})"
            cls = PLUGINS.get(option.name)
            if cls is None:
                raise ConfigError(
                    f"{where}: unknown plugin {option.name!r}; supported: {sorted(PLUGINS)}"
                )
            unknown = sorted(k for k in option.arguments if not cls.accepts(k))
            if unknown:
                raise ConfigError(
                    f"{where}.arguments: unknown {unknown}; supported: {sorted(cls.ARGUMENTS)}"
                )
            try:
                cls(option).check()
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            hierarchy |= option.name == "drf" and option.enabled("enableHierarchy")
            proportion |= option.name == "proportion"
    if hierarchy and proportion:  # as Volcano's UnmarshalSchedulerConf
        raise ConfigError("tiers: proportion and drf with enableHierarchy conflict")
    for configuration in config.configurations:
        if configuration.name not in ACTIONS:
            raise ConfigError(
                f"configurations: unknown action {configuration.name!r}; "
                f"supported: {sorted(ACTIONS)}"
            )
        known = ACTION_ARGUMENTS.get(configuration.name, frozenset())
        volcano = ACTION_VOLCANO_ONLY.get(configuration.name, frozenset())
        unknown = sorted(set(configuration.arguments) - known - volcano)
        if unknown:
            raise ConfigError(
                f"configurations ({configuration.name}).arguments: unknown {unknown}; "
                f"supported: {sorted(known)}, accepted but ignored (Volcano only): "
                f"{sorted(volcano)}"
            )
    return config


def ignored_arguments(config: SchedulerConfig) -> list[str]:
    """Arguments Volcano's plugins and actions take that Sluice accepts but does not
    implement."""
    out = [
        f"{c.name}: {key}"
        for c in config.configurations
        for key in sorted(c.arguments)
        if key in ACTION_VOLCANO_ONLY.get(c.name, frozenset())
    ]
    for tier in config.tiers:
        for option in tier:
            cls = PLUGINS.get(option.name)
            for key in sorted(option.arguments):
                if cls is not None and key in cls.VOLCANO_ONLY:
                    out.append(f"{option.name}: {key}")
    return out


def warnings(config: SchedulerConfig) -> list[str]:
    """What a person running this configuration should know: arguments accepted but not
    implemented, and a queue plugin that caps every queue at the cluster's current size."""
    out = [f"ignored (Volcano only): {a}" for a in ignored_arguments(config)]
    for tier in config.tiers:
        for option in tier:
            flat = option.name == "capacity" and not option.enabled("enableHierarchy")
            if flat or option.name == "proportion":
                out.append(
                    f"{option.name}{' without enableHierarchy' if flat else ''}: a queue's "
                    "real capability is the cluster's current size, so a pod that needs a new "
                    "node waits for its queue (gated, when gates are on) and an autoscaler "
                    "never adds that node; capacity with enableHierarchy: true leaves the "
                    "cluster's size to the nodes"
                )
    return out


def load(text: str, *, source: str = "") -> SchedulerConfig:
    """Parse and check a configuration in Volcano's format."""
    return check(SchedulerConfig.from_yaml(text, source=source))


def actions(config: SchedulerConfig) -> list[tuple[str, Action]]:
    return [(name, ACTIONS[name]) for name in config.actions]


def plugin_tiers(config: SchedulerConfig) -> list[list[Plugin]]:
    """Fresh plugin instances, tier by tier, for one session."""
    return [[PLUGINS[option.name](option) for option in tier] for tier in config.tiers]


class LiveConfig:
    """The configuration in force: read from its source (a file, a ConfigMap) and read again
    when it changes, as Volcano's scheduler reloads its conf. A changed text that does not load
    keeps the previous configuration, and says why in ``error`` until a good one arrives."""

    def __init__(self, source: ConfigText | None, fallback: SchedulerConfig) -> None:
        self.source = source
        self.config = fallback
        self.error = ""
        if source is not None:
            self.current()
            if self.error:  # the first text must load: there is nothing to fall back on
                raise ConfigError(self.error.removesuffix("; keeping the configuration in force"))

    def current(self) -> SchedulerConfig:
        if self.source is None:
            return self.config
        try:
            text = self.source.changed()
            if text is not None:
                self.config = load(text, source=self.source.where)
                self.error = ""
        except Exception as exc:  # any text that does not load keeps the one in force
            self.error = f"{self.source.where}: {exc}; keeping the configuration in force"
        return self.config

    @property
    def warnings(self) -> list[str]:
        return warnings(self.config)
