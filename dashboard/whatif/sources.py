"""The what-if lab's sources that come from the connected cluster: the workload Sluice's
history recorded there (``workload: {recorded: ...}``) and a copy of its nodes
(``cluster: {connected: ...}``).

Both are *frozen* into the experiment file when it is made: ``resolve`` fills an experiment
that names a window (``recorded: {from, to}``) or asks for a copy (``connected: {}``) with the
pods and nodes themselves, so the exported file plays the same on any machine, without the
database or the cluster.

Recorded workload — the pods of one cluster (its kube-system UID; by default the cluster of
the latest stored report) created in ``[from, to)``, and those created before ``from`` that
had not finished by then (they arrive at 0). Read from ``TrackedPod`` (one row per pod, with
the facts the scheduler reported: ``CycleReport.pod_facts``) and ``PodTransition`` (its
history: created, bound, finished, gone):

- arrival: the pod's creation time (``metadata.creationTimestamp``) minus ``from``;
- requests, PodGroup and its ``minMember``, priority classes: the scheduler's report of them;
  a pod no report carried them for (a scheduler older than ``pod_facts``, a lost report) is
  left out, and ``notes`` says how many;
- run time: from being bound (Sluice's allocation when the cluster then showed it running,
  else the first cycle that saw it running) to the first cycle that saw it succeeded, failed,
  terminating or gone. A pod bound before ``from`` runs for what was left of it. A pod still
  running at ``to``, or never bound by then, has no recorded end: it runs until the horizon
  once placed. A pod deleted or failed before it was ever bound is left out (nobody waits
  for it any more), and ``notes`` says how many;
- times have the resolution of the scheduler's period (history records per cycle).

Not recorded, so not played: node selectors, affinity, tolerations, limits, and a queue's
weight and reclaimable flag (defaults: none, weight 1, reclaimable). Queues: as the latest
report of that cluster lists them (capability, deserved, guarantee as written, parent); a
queue that report does not have takes the real capability of its last sample in the window
(no parent: under root); a queue named by pods and never reported has no limit.

Copy of the connected cluster — every node the Kubernetes API lists (as the Autoscaler page
reads them, through ``dashboard.selectors.cluster``) but cordoned ones: allocatable, labels,
and taints other than the node lifecycle controller's (``node.kubernetes.io/*``) and
Cluster Autoscaler's ``ToBeDeletedByClusterAutoscaler``. Nodes are grouped by shape: the
``node.kubernetes.io/instance-type`` label when present, else identical allocatable and labels
(``kubernetes.io/hostname`` aside). The autoscaler's node group is a template of the commonest
group (its commonest allocatable, the labels and taints all its nodes share), from 0 to
``nodeGroupMax`` nodes, 60 s to provision.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from scheduler.api.labels import GROUP_NAME_ANNOTATION
from scheduler.api.quantity import unit_name
from scheduler.api.report import PodState, TransitionKind
from simcluster.scenario import Scenario, ScenarioError, parse

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
HOSTNAME = "kubernetes.io/hostname"
RECORDED_KEYS = {"cluster", "from", "to", "queues", "priorityClasses", "gangs", "pods",
                 "notes"}  # fmt: skip
POD_KEYS = {"at", "namespace", "name", "queue", "gang", "requests", "priorityClassName",
            "duration"}  # fmt: skip
CONNECTED_KEYS = {"cluster", "copiedAt", "nodes", "nodeGroups", "groups", "nodeGroupMax",
                  "notes"}  # fmt: skip
ENDED = {PodState.SUCCEEDED, PodState.FAILED, PodState.TERMINATING, PodState.DELETED}
ENDED_VALUES = {s.value for s in ENDED}
CHUNK = 500


class SourceError(ValueError):
    """A source cannot be read or frozen; the message names the field."""


# -- freezing ----------------------------------------------------------------------------------


def resolve(data: Any, *, max_pods: int) -> Any:
    """``data`` (an experiment file's mapping) with a recorded workload's window and a
    connected cluster's copy read and frozen in; anything else as it was."""
    if not isinstance(data, dict):
        return data
    data = copy.deepcopy(data)
    workload = data.get("workload")
    if isinstance(workload, dict) and isinstance(workload.get("recorded"), dict):
        recorded = workload["recorded"]
        if "pods" not in recorded:
            _only(recorded, {"from", "to", "cluster"}, "workload.recorded")
            workload["recorded"] = record_window(
                parse_when(recorded.get("from"), "workload.recorded.from"),
                parse_when(recorded.get("to"), "workload.recorded.to"),
                cluster=recorded.get("cluster") or None,
                max_pods=max_pods,
            )
    cluster = data.get("cluster")
    if isinstance(cluster, dict) and isinstance(cluster.get("connected"), dict):
        connected = cluster["connected"]
        if "nodes" not in connected:
            _only(connected, {"nodeGroupMax"}, "cluster.connected")
            cluster["connected"] = copy_connected(
                node_group_max=_int(connected.get("nodeGroupMax", 10), "cluster.connected")
            )
    return data


def _only(data: dict, allowed: set[str], field: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise SourceError(f"{field}: unknown key(s) {', '.join(unknown)}; expected "
                          f"{', '.join(sorted(allowed))}")  # fmt: skip


def parse_when(value: Any, field: str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise SourceError(f"{field}: not a date and time: {value!r}") from None
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    raise SourceError(f"{field}: a date and time (ISO 8601, UTC unless it says otherwise)")


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SourceError(f"{field}.nodeGroupMax: a whole number >= 1")
    return value


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


# -- the recorded workload ---------------------------------------------------------------------


def current_cluster() -> str | None:
    """The cluster of the latest stored report (None when no report is stored)."""
    from dashboard.models import Cycle, LiveState
    from dashboard.selectors.live import CYCLE_KEY

    data = LiveState.objects.filter(key=CYCLE_KEY).values_list("data", flat=True).first()
    if data is not None:
        return str(data.get("cluster") or "")
    latest = Cycle.objects.order_by("-stored_at", "-started_at").values_list("cluster").first()
    return None if latest is None else latest[0]


def record_window(
    start: datetime, end: datetime, *, cluster: str | None = None, max_pods: int = 2000
) -> dict:
    """The frozen ``recorded`` workload of ``cluster``'s pods over ``[start, end)``."""
    from dashboard.models import PodTransition, TrackedPod

    if end <= start:
        raise SourceError("workload.recorded.to: must be after workload.recorded.from")
    if cluster is None:
        cluster = current_cluster()
        if cluster is None:
            raise SourceError("workload.recorded.cluster: no scheduler report is stored: "
                              "Sluice has recorded no cluster yet")  # fmt: skip
    mine = TrackedPod.objects.filter(cluster=cluster)
    created_in = set(
        PodTransition.objects.filter(
            kind=TransitionKind.CREATED.value, at__gte=start, at__lt=end,
            uid__in=mine.values("uid"),
        ).values_list("uid", flat=True)
    )  # fmt: skip
    ended_before = PodTransition.objects.filter(
        at__lt=start, to_state__in=[s.value for s in ENDED]
    ).values("uid")
    alive_at_start = set(
        PodTransition.objects.filter(
            kind=TransitionKind.CREATED.value, at__lt=start, uid__in=mine.values("uid")
        )
        .exclude(uid__in=ended_before)
        .values_list("uid", flat=True)
    )
    uids = sorted(created_in | alive_at_start)
    words = f"between {_iso(start)} and {_iso(end)} on cluster {cluster or '(unknown)'}"
    if not uids:
        raise SourceError(f"workload.recorded.from/to: no pod was recorded {words}")
    histories: dict[str, list[tuple]] = {}
    rows: dict[str, dict] = {}
    for chunk in _chunks(uids):
        for r in mine.filter(uid__in=chunk).values("uid", "namespace", "name", "queue", "facts"):
            rows[r["uid"]] = r
        for t in PodTransition.objects.filter(uid__in=chunk, at__lt=end).order_by("at", "id"):
            histories.setdefault(t.uid, []).append((t.at, t.kind, t.from_state, t.to_state))
    pods, no_facts, gone_unbound, unknown_end = [], 0, 0, 0
    for uid in uids:
        row = rows[uid]
        created, bound, ended = _timeline(histories.get(uid, []))
        if created is None:
            continue  # no creation recorded: no arrival to play
        if row["facts"] is None:
            no_facts += 1
            continue
        if ended is not None and bound is None:
            gone_unbound += 1
            continue
        facts = row["facts"]
        pod: dict[str, Any] = {
            "at": round(max(0.0, (created - start).total_seconds()), 3),
            "namespace": row["namespace"],
            "name": row["name"],
            "queue": row["queue"] or "default",
            "requests": as_quantities(facts.get("requests") or {}),
        }
        if facts.get("group"):
            pod["gang"] = facts["group"]
        if facts.get("priorityClassName"):
            pod["priorityClassName"] = facts["priorityClassName"]
        if bound is not None and ended is not None:
            pod["duration"] = round((ended - max(bound, start)).total_seconds(), 3)
        else:
            unknown_end += 1
        pods.append((uid, pod))
    if not pods:
        raise SourceError(
            f"workload.recorded.from/to: no pod that can be played was recorded {words} "
            f"({no_facts} without recorded requests, {gone_unbound} gone before being bound)"
        )
    if len(pods) > max_pods:
        raise SourceError(f"workload.recorded.from/to: {len(pods)} pods were recorded {words} "
                          f"(at most {max_pods}): choose a shorter window")  # fmt: skip
    pods.sort(key=lambda p: (p[1]["at"], p[1]["namespace"], p[1]["name"], p[0]))
    _rename_repeats([p for _, p in pods])
    facts_of = {uid: rows[uid]["facts"] for uid, _ in pods}
    gangs: dict[tuple[str, str], dict] = {}
    classes: dict[str, int] = {}
    for uid, pod in pods:
        facts = facts_of[uid]
        if facts.get("priorityClassName"):
            classes[facts["priorityClassName"]] = int(facts.get("priority") or 0)
        if pod.get("gang"):
            gang = gangs.setdefault(
                (pod["namespace"], pod["gang"]),
                {"namespace": pod["namespace"], "name": pod["gang"],
                 "minMember": int(facts.get("minMember") or 1), "queue": pod["queue"]},
            )  # fmt: skip
            if facts.get("groupPriorityClassName"):
                gang["priorityClassName"] = facts["groupPriorityClassName"]
                classes[facts["groupPriorityClassName"]] = int(facts.get("groupPriority") or 0)
    queue_names = sorted({p["queue"] for _, p in pods})
    notes = [
        "node selectors, affinity, tolerations and limits are not recorded: played without",
        "queue weight and reclaimable are not recorded: weight 1, reclaimable",
    ]
    if no_facts:
        notes.append(f"{no_facts} pod(s) left out: no report carried their requests")
    if gone_unbound:
        notes.append(f"{gone_unbound} pod(s) left out: deleted or failed before being bound")
    if unknown_end:
        notes.append(f"{unknown_end} pod(s) still running or never bound at the window's "
                     "end: no recorded run time, they run until the horizon once placed")  # fmt: skip
    queues, queue_notes = recorded_queues(cluster, queue_names, start, end)
    return {
        "cluster": cluster,
        "from": _iso(start),
        "to": _iso(end),
        "queues": queues,
        "priorityClasses": [
            {"name": n, "value": v}
            for n, v in sorted(classes.items())
            if not n.startswith("system-")
        ],  # fmt: skip
        "gangs": sorted(gangs.values(), key=lambda g: (g["namespace"], g["name"])),
        "pods": [p for _, p in pods],
        "notes": notes + queue_notes,
    }


def _timeline(history: list[tuple]) -> tuple[datetime | None, datetime | None, datetime | None]:
    """A pod's creation, the moment it was bound (Sluice's allocation when the next state
    the cluster showed was running, else the first cycle that saw it running) and the moment
    it stopped running (None: not recorded before the window's end)."""
    created = bound = ended = binding_at = None
    for at, kind, was, to in history:
        if kind == TransitionKind.CREATED.value:
            created = created or at
            continue
        if bound is None:
            if to == PodState.BINDING.value:
                binding_at = at
            elif to == PodState.RUNNING.value:
                bound = binding_at if was == PodState.BINDING.value and binding_at else at
            else:
                binding_at = None  # the bind failed or was undone
        if ended is None and to in ENDED_VALUES:
            ended = at
    return created, bound, ended


def _rename_repeats(pods: list[dict]) -> None:
    """A name used again in the window (a pod deleted and created again) gets ``-again-N``:
    the simulated cluster keeps finished pods, so the second would not be created."""
    seen: Counter[tuple[str, str]] = Counter()
    for pod in pods:
        key = (pod["namespace"], pod["name"])
        seen[key] += 1
        if seen[key] > 1:
            pod["name"] = f"{pod['name']}-again-{seen[key] - 1}"


def recorded_queues(
    cluster: str, names: list[str], start: datetime, end: datetime
) -> tuple[list[dict], list[str]]:
    """The queues ``names`` and their ancestors as recorded (scenario format), and notes."""
    from dashboard.models import LiveState, QueueSample
    from dashboard.selectors.live import CYCLE_KEY

    latest = LiveState.objects.filter(key=CYCLE_KEY).values_list("data", flat=True).first() or {}
    reported = (
        {q["name"]: q for q in latest.get("queues") or []}
        if str(latest.get("cluster") or "") == cluster
        else {}
    )
    out: dict[str, dict] = {}
    notes: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out or name == "root":
            continue
        q = reported.get(name)
        if q is not None:
            if q.get("implicit"):
                continue  # root and the default queue: no Queue object
            spec: dict[str, Any] = {}
            if q.get("spec_capability"):
                spec["capability"] = dict(q["spec_capability"])
            if q.get("spec_deserved"):
                spec["deserved"] = dict(q["spec_deserved"])
            if q.get("spec_guarantee"):
                spec["guarantee"] = {"resource": dict(q["spec_guarantee"])}
            if q.get("parent") and q["parent"] != "root":
                spec["parent"] = q["parent"]
                todo.append(q["parent"])
            out[name] = {"name": name, "spec": spec}
            continue
        sample = (
            QueueSample.objects.filter(cluster=cluster, queue=name, at__lt=end)
            .order_by("-at")
            .values_list("capability", flat=True)
            .first()
        )
        if sample:
            out[name] = {"name": name, "spec": {"capability": as_quantities(sample)}}
            notes.append(f"queue {name}: not in the latest report; capability from its last "
                         "sample (the real capability), under root")  # fmt: skip
        elif name != "default":
            out[name] = {"name": name, "spec": {}}
            notes.append(f"queue {name}: never reported: no limit")

    def depth(name: str, seen: frozenset[str] = frozenset()) -> int:
        parent = out[name]["spec"].get("parent")
        if not parent or parent not in out or parent in seen:
            return 0
        return 1 + depth(parent, seen | {name})

    # Parents before their children, as they would be created.
    return [out[n] for n in sorted(out, key=lambda n: (depth(n), n))], notes


def as_quantities(units: dict[str, float]) -> dict[str, str]:
    """Engine units (millicores, bytes, milli-units of extended resources) as quantities."""
    out = {}
    for name, value in sorted(units.items()):
        n = int(value)
        if unit_name(name) in ("bytes", "pods"):
            out[name] = str(n)
        else:
            out[name] = str(n // 1000) if n % 1000 == 0 else f"{n}m"
    return out


def _chunks(items: list[str]):
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]


# -- the copy of the connected cluster ---------------------------------------------------------


def copy_connected(*, node_group_max: int = 10) -> dict:
    """The frozen ``connected`` cluster: the nodes the connected cluster lists now."""
    from dashboard.selectors.cluster import ClusterError, cluster_call, core_api

    try:
        core = core_api()
        # The API's JSON, not the client's models (seconds at a few thousand nodes), as the
        # Autoscaler page reads them.
        listed = cluster_call(
            "list nodes", lambda **kw: core.list_node(_preload_content=False, **kw)
        )
        system = cluster_call(
            "read namespace kube-system",
            lambda **kw: core.read_namespace("kube-system", **kw),
            target="namespace kube-system",
        )
    except ClusterError as exc:
        raise SourceError(f"cluster.connected: {exc}") from None
    nodes = json.loads(listed.data).get("items") or []
    frozen = nodes_copy(nodes, node_group_max=node_group_max)
    return {
        "cluster": str(system.metadata.uid or ""),
        "copiedAt": _iso(datetime.now(UTC).replace(microsecond=0)),
        **frozen,
    }


def nodes_copy(nodes: list[dict], *, node_group_max: int = 10) -> dict:
    """Nodes (Kubernetes API JSON) as scenario nodes, their groups by shape, and a node group
    of the commonest shape for the autoscaler."""
    copied, groups, cordoned = [], {}, 0
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        if (node.get("spec") or {}).get("unschedulable"):
            cordoned += 1
            continue
        labels = {k: v for k, v in (node["metadata"].get("labels") or {}).items() if k != HOSTNAME}
        allocatable = dict((node.get("status") or {}).get("allocatable") or {})
        taints = [
            {k: t[k] for k in ("key", "value", "effect") if t.get(k) is not None}
            for t in (node.get("spec") or {}).get("taints") or []
            if not str(t.get("key", "")).startswith("node.kubernetes.io/")
            and t.get("key") != "ToBeDeletedByClusterAutoscaler"
        ]
        item: dict[str, Any] = {"name": node["metadata"]["name"], "capacity": allocatable}
        if labels:
            item["labels"] = labels
        if taints:
            item["taints"] = taints
        copied.append(item)
        key = (
            ("instance-type", labels[INSTANCE_TYPE])
            if INSTANCE_TYPE in labels
            else ("shape", tuple(sorted(allocatable.items())), tuple(sorted(labels.items())))
        )
        groups.setdefault(key, []).append(item)
    if not copied:
        raise SourceError("cluster.connected: the connected cluster lists no schedulable node")
    named = []
    for i, (key, members) in enumerate(
        sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]["name"]))
    ):
        name = _group_name(key[1]) if key[0] == "instance-type" else f"shape-{i + 1}"
        named.append((name, key[0], members))
    name, by, members = named[0]  # the commonest (ties: the group of the first node by name)
    shared_labels = dict(set.intersection(*(set((m.get("labels") or {}).items()) for m in members)))
    taint_sets = [tuple(sorted(tuple(sorted(t.items())) for t in m.get("taints") or []))
                  for m in members]  # fmt: skip
    capacities = Counter(tuple(sorted(m["capacity"].items())) for m in members)
    template: dict[str, Any] = {"capacity": dict(capacities.most_common(1)[0][0])}
    if shared_labels:
        template["labels"] = dict(sorted(shared_labels.items()))
    if len(set(taint_sets)) == 1 and members[0].get("taints"):
        template["taints"] = members[0]["taints"]
    notes = [f"{cordoned} cordoned node(s) left out"] if cordoned else []
    return {
        "nodes": copied,
        "groups": [
            {
                "name": n,
                "by": "instance type" if b == "instance-type" else "allocatable and labels",
                "nodes": [m["name"] for m in ms],
            }
            for n, b, ms in named
        ],  # fmt: skip
        "nodeGroups": [
            {
                "name": f"copy-{name}",
                "min": 0,
                "max": node_group_max,
                "provisionDelay": 60,
                "template": template,
            }
        ],  # fmt: skip
        "nodeGroupMax": node_group_max,
        "notes": notes,
    }


def _group_name(instance_type: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", instance_type.lower()).strip("-") or "group"


# -- playing them ------------------------------------------------------------------------------


def cluster_objects(cluster: dict, source: str) -> Scenario:
    """A frozen ``connected`` cluster's nodes and node group, as a Scenario's."""
    try:
        return parse(
            {"nodes": cluster["nodes"], "nodeGroups": cluster.get("nodeGroups") or []},
            source=f"{source} cluster.connected",
        )
    except ScenarioError as exc:
        raise SourceError(str(exc)) from None


def recorded_scenario(recorded: dict, cluster: dict, source: str = "experiment") -> Scenario:
    """A frozen recorded workload on a frozen cluster, as a Scenario (pods joining their
    PodGroup, which arrives with its first pod)."""
    where = f"{source} workload.recorded"
    namespaces = sorted({p["namespace"] for p in recorded["pods"]})
    items = []
    for p in recorded["pods"]:
        item = {k: v for k, v in p.items() if k != "gang"}
        if p.get("gang"):
            item["annotations"] = {GROUP_NAME_ANNOTATION: p["gang"]}
        items.append(item)
    try:
        scenario = parse(
            {
                "name": "recorded",
                "kubelet": {"startupDelay": 1},
                "namespaces": [{"name": n} for n in namespaces],
                "queues": recorded.get("queues") or [],
                "nodes": cluster["nodes"],
                "nodeGroups": cluster.get("nodeGroups") or [],
                "workload": items,
            },
            source=where,
        )
    except ScenarioError as exc:
        raise SourceError(str(exc)) from None
    first: dict[tuple[str, str], float] = {}
    for p in recorded["pods"]:
        if p.get("gang"):
            key = (p["namespace"], p["gang"])
            first[key] = min(first.get(key, p["at"]), p["at"])
    for gang in recorded.get("gangs") or []:
        key = (gang["namespace"], gang["name"])
        if key not in first:
            continue
        arrival = next(a for a in scenario.arrivals if a.at >= first[key])
        spec = {"minMember": gang["minMember"], "queue": gang["queue"]}
        if gang.get("priorityClassName"):
            spec["priorityClassName"] = gang["priorityClassName"]
        arrival.podgroups.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": gang["name"], "namespace": gang["namespace"]},
            "spec": spec, "status": {"phase": "Pending"},
        })  # fmt: skip
    return scenario


def priority_classes(workload: dict) -> list[dict]:
    """The PriorityClasses a recorded workload's pods and PodGroups name."""
    recorded = workload.get("recorded") or {}
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": pc["name"]}, "value": int(pc["value"])}
        for pc in recorded.get("priorityClasses") or []
    ]  # fmt: skip


def check_recorded(recorded: dict, where: str, max_pods: int) -> None:
    """A frozen recorded workload's shape, each error naming its field."""
    unknown = sorted(set(recorded) - RECORDED_KEYS)
    if unknown:
        raise SourceError(f"{where}: unknown key(s) {', '.join(unknown)}")
    pods = recorded.get("pods")
    if not isinstance(pods, list) or not pods:
        raise SourceError(f"{where}.pods: no pod to play (a list of at least one pod)")
    if len(pods) > max_pods:
        raise SourceError(f"{where}.pods: {len(pods)} pods (at most {max_pods})")
    for i, pod in enumerate(pods):
        if not isinstance(pod, dict):
            raise SourceError(f"{where}.pods[{i}]: expected a mapping")
        bad = sorted(set(pod) - POD_KEYS)
        if bad:
            raise SourceError(f"{where}.pods[{i}]: unknown key(s) {', '.join(bad)}")
    for key in ("queues", "gangs", "priorityClasses"):
        if not isinstance(recorded.get(key) or [], list):
            raise SourceError(f"{where}.{key}: expected a list")
    for i, gang in enumerate(recorded.get("gangs") or []):
        if not isinstance(gang, dict) or not {"namespace", "name", "minMember", "queue"} <= set(
            gang
        ):
            raise SourceError(f"{where}.gangs[{i}]: namespace, name, minMember and queue")
    for i, pc in enumerate(recorded.get("priorityClasses") or []):
        if not isinstance(pc, dict) or not isinstance(pc.get("value"), int):
            raise SourceError(f"{where}.priorityClasses[{i}]: name and value (an integer)")


def check_connected(connected: dict, where: str) -> None:
    unknown = sorted(set(connected) - CONNECTED_KEYS)
    if unknown:
        raise SourceError(f"{where}: unknown key(s) {', '.join(unknown)}")
    if not isinstance(connected.get("nodes"), list) or not connected["nodes"]:
        raise SourceError(f"{where}.nodes: no node (a list of at least one node)")
