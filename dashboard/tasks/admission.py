"""The resource monitor of Kueue KEP-3211 under Celery: ``refresh_capacity_snapshot`` (queue
``default``) lists nodes and pods and keeps the capacity snapshot in Redis.

Beat sends it every ``SLUICE_ADMISSION_REFRESH_S`` seconds; the scheduler asks for one at once
("on demand") when its check is waiting for a snapshot. The scheduler worker reads the stored
JSON with ``StoredSnapshot``, which parses it again only when a newer one was stored.
"""

from __future__ import annotations

import json
import logging

import redis
import urllib3
from celery import shared_task
from django.conf import settings
from kubernetes import client
from kubernetes.config import ConfigException

from dashboard import kube
from dashboard.health import broker_client
from scheduler.admission.context import Admission, NodeGroupSource
from scheduler.admission.monitor import CapacitySnapshot
from scheduler.admission.node_groups import NodeGroupError, load_node_groups, sized_for
from scheduler.admission.source import fetch_snapshot
from scheduler.config import ConfigFile, ConfigText, SchedulerConfig, default_config
from scheduler.kube.configmap import ConfigMapText

log = logging.getLogger(__name__)

SNAPSHOT_KEY = "sluice:admission:snapshot"
SNAPSHOT_TAKEN_KEY = "sluice:admission:snapshot:taken"  # last_check, to skip unchanged reads
_KEEP_PERIODS = 5  # a snapshot not refreshed for this many periods is dropped, not trusted


@shared_task(
    name="dashboard.tasks.refresh_capacity_snapshot",
    ignore_result=True,
    autoretry_for=(OSError, urllib3.exceptions.HTTPError),
    retry_backoff=1,
    retry_backoff_max=10,
    max_retries=3,
    soft_time_limit=50,
    time_limit=60,
)
def refresh_capacity_snapshot() -> dict | None:
    """Take the snapshot through the cluster's API and store it; idempotent."""
    try:
        api = kube.api_client()
    except (RuntimeError, ConfigException) as exc:
        log.warning("no capacity snapshot: %s", exc, extra={"object": "cluster"})
        return None
    now = kube.cluster_clock()()
    snapshot = fetch_snapshot(api, now, timeout=settings.SLUICE_KUBE_TIMEOUT * 6)
    store_snapshot(broker_client(), snapshot)
    summary = {"nodes": len(snapshot.nodes), "last_check": snapshot.last_check.isoformat()}
    log.info("capacity snapshot stored", extra={"object": "admission", **summary})
    return summary


def store_snapshot(client: redis.Redis, snapshot: CapacitySnapshot) -> None:
    keep = max(1, int(settings.SLUICE_ADMISSION_REFRESH_S * _KEEP_PERIODS))
    with client.pipeline(transaction=True) as pipe:
        pipe.set(SNAPSHOT_KEY, json.dumps(snapshot.to_json()), ex=keep)
        pipe.set(SNAPSHOT_TAKEN_KEY, snapshot.last_check.isoformat(), ex=keep)
        pipe.execute()


class StoredSnapshot:
    """The snapshot in Redis, or None; parsed once per stored snapshot, not once per cycle."""

    def __init__(self) -> None:
        self._client: redis.Redis | None = None  # one connection pool for the worker's life
        self._taken: bytes | None = None
        self._snapshot: CapacitySnapshot | None = None

    def __call__(self) -> CapacitySnapshot | None:
        try:
            client = self._client = self._client or broker_client()
            taken = client.get(SNAPSHOT_TAKEN_KEY)
            if taken is None:
                self._taken, self._snapshot = None, None
            elif taken != self._taken:
                raw = client.get(SNAPSHOT_KEY)
                self._snapshot = CapacitySnapshot.from_json(json.loads(raw)) if raw else None
                self._taken = taken if raw else None
        except (redis.RedisError, OSError) as exc:
            log.warning("capacity snapshot unreadable: %s", exc, extra={"object": SNAPSHOT_KEY})
        return self._snapshot


def request_snapshot() -> None:
    """Ask for a snapshot now; the Admission calling this throttles the requests."""
    refresh_capacity_snapshot.apply_async(queue="default")


def known_node_groups() -> NodeGroupSource | None:
    """The autoscaler's node groups from ``SLUICE_ADMISSION_NODE_GROUPS``, sized by each
    snapshot; None when no file is configured or it cannot be read (said in the log)."""
    path = settings.SLUICE_ADMISSION_NODE_GROUPS
    if not path:
        return None
    try:
        groups = load_node_groups(path)
    except NodeGroupError as exc:
        log.warning("no node groups: %s", exc, extra={"object": f"file {path}"})
        return None
    return lambda snapshot: sized_for(snapshot, groups)


def scheduler_admission(config: SchedulerConfig) -> Admission:
    """The scheduler worker's Admission: snapshot from Redis, refreshes asked through Celery."""
    return Admission.for_config(
        config,
        StoredSnapshot(),
        node_groups=known_node_groups(),
        request_refresh=request_snapshot,
        refresh_request_interval_s=settings.SLUICE_ADMISSION_REQUEST_INTERVAL_S,
    )


def scheduler_config_source(api: client.ApiClient) -> ConfigText | None:
    """Where the scheduler reads its configuration: ``SLUICE_SCHEDULER_CONF`` (a file) or
    ``SLUICE_SCHEDULER_CONFIGMAP`` (namespace/name); None for the default."""
    if settings.SLUICE_SCHEDULER_CONF:
        return ConfigFile(settings.SLUICE_SCHEDULER_CONF)
    if settings.SLUICE_SCHEDULER_CONFIGMAP:
        namespace, name = settings.SLUICE_SCHEDULER_CONFIGMAP.split("/")
        return ConfigMapText(api, namespace, name)
    return None


def scheduler_config() -> SchedulerConfig:
    """The default configuration with the enqueue arguments taken from the settings (used when
    no configuration file or ConfigMap is given; theirs decide everything otherwise)."""
    return default_config().with_action_arguments(
        "enqueue",
        admissionCheck=settings.SLUICE_ADMISSION_CHECK,
        retryAfter=settings.SLUICE_ADMISSION_RETRY_S,
        maxSnapshotAge=settings.SLUICE_ADMISSION_REFRESH_S * _KEEP_PERIODS,
    )
