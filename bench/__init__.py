"""Benchmarks (``make bench``); see ``bench/__main__.py``."""

from __future__ import annotations

import os
from pathlib import Path

from scheduler import registry
from scheduler.config import DEFAULT_CONFIG_YAML, SchedulerConfig


def scheduler_config(default_yaml: str | None = None) -> SchedulerConfig:
    """The configuration a benchmark runs: ``SLUICE_SCHEDULER_CONF`` (a file in Volcano's
    format), as every other entry point reads it, else ``default_yaml``, else Sluice's
    default; loaded and checked by the same ``registry.load``."""
    path = os.environ.get("SLUICE_SCHEDULER_CONF")
    if path:
        return registry.load(Path(path).read_text(), source=f"file {path}")
    return registry.load(default_yaml or DEFAULT_CONFIG_YAML, source="benchmark")
