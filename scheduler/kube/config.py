"""Reading a kubeconfig: the API client, and the simulated cluster's clock when it has one.

The simulated cluster records its clock in the kubeconfig as a cluster extension named
``sim.sluice.io/clock``; a scheduler that follows it shares the simulation's speed-up
(``simcluster --speed 60``). Any other cluster runs on the wall clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml
from kubernetes import client, config

from scheduler.api.labels import CLOCK_EXTENSION
from scheduler.clock import WallClock


def api_client_from_kubeconfig(path: str | Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(path))


def clock_from_kubeconfig(path: str | Path) -> Callable[[], float]:
    """``now()`` for the current context's cluster: simulated time, or the wall clock."""
    document = yaml.safe_load(Path(path).read_text()) or {}
    contexts = {c["name"]: c.get("context") or {} for c in document.get("contexts") or []}
    cluster_name = contexts.get(document.get("current-context"), {}).get("cluster")
    for entry in document.get("clusters") or []:
        if entry.get("name") != cluster_name:
            continue
        for extension in (entry.get("cluster") or {}).get("extensions") or []:
            if extension.get("name") == CLOCK_EXTENSION:
                return WallClock.follow(extension.get("extension") or {}).now
    return time.time
