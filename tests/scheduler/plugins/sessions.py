"""Configurations in Volcano's format and open sessions, for the plugin tests that call a
plugin's extension points directly (as Volcano's plugin tests call ssn.JobEnqueueable…)."""

from __future__ import annotations

from typing import Any

import yaml

from scheduler import registry
from scheduler.api.task_info import TaskInfo
from scheduler.config import SchedulerConfig
from scheduler.framework.session import Session
from scheduler.framework.writer import Writer
from tests.fakes import RecordingClusterClient
from tests.scheduler.uthelper import Scenario


def configuration(
    *tiers: list[Any], actions: str = "enqueue, allocate, backfill"
) -> SchedulerConfig:
    """Tiers of plugin names or ``{name: …, arguments: …}`` options."""
    raw = {
        "actions": actions,
        "tiers": [
            {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers
        ],
    }
    return registry.load(yaml.safe_dump(raw), source="test")


def open_session(scenario: Scenario, config: SchedulerConfig, now: float = 0.0) -> Session:
    cache = scenario.cache()
    writer = Writer(cache, RecordingClusterClient())
    ssn = Session(cache.snapshot(), config, writer, now, registry.plugin_tiers(config))
    ssn.open()
    return ssn


def task_named(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)
