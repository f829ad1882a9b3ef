"""Volcano's own scheduler tests, as data: objects in, decisions out.

Each file under ``cases/`` translates the table of one Volcano test function (Volcano commit
``VOLCANO_COMMIT``) into YAML, one entry per Go test case, keeping the case's name. A case is
run the way the scheduler worker runs a cycle: its actions and tiers become a configuration
in Volcano's format, loaded by ``scheduler.registry.load``; its objects fill a scheduler cache;
``run_cycle`` decides and a recording client takes the writes.

Case format (every key but ``name`` optional)::

    name: the Go test case's Name
    actions: [allocate]                 # the actions the Go test runs, in order
    tiers: [{plugins: [{name: gang, enableJobOrder: true}]}]   # Volcano's tiers and switches
    switches: go                        # go (the default): a switch the case does not set is
                                        # off, as in the Go test's PluginOption literals;
                                        # conf: on, as in a volcano-scheduler.conf
    configurations: [{name: enqueue, arguments: {...}}]
    queues:     [{name, weight, capability, deserved, guarantee, parent, priority, state,
                  reclaimable, annotations}]
    podgroups:  [{name, namespace, queue, minMember, minTaskMember, phase, minResources,
                  priorityClassName}]
    pods:       [{namespace, name, node, phase, requests, group, labels, nodeSelector,
                  priority, priorityClassName, preemptionPolicy, tolerations, affinity,
                  annotations, initContainers, deletionTimestamp}]
    nodes:      [{name, allocatable, labels, taints, unschedulable}]
    priorityClasses: [{name, value}]
    expect:
      binds: {ns/pod: node}             # exactly these binds (Volcano's ExpectBindMap)
      bindCount: 2                      # only the number (Volcano's MinimalBindCheck)
      evicted: [ns/pod]                 # exactly these evictions, as a multiset
      pipelined: {ns/podgroup: [node]}  # the job has pipelined tasks, each on one of these
      phases: {ns/podgroup: Inqueue}    # PodGroup phases after the cycle
      queues: {q1: {deserved: {cpu: "2"}, allocated: {cpu: "1"}, share: 0.5}}
                                        # the queue plugin's figures after the cycle
                                        # (CycleReport.queues): each resource listed is
                                        # compared in engine units, one the report lacks
                                        # counting as 0; resources not listed are not checked
      conditions: {ns/podgroup: {Unschedulable: true}}
                                        # the PodGroup's conditions after the cycle (the last
                                        # status the cycle wrote, else the object's): true, it
                                        # has one of that type with status True; false, it
                                        # has none with status True; types not listed are
                                        # not checked
      scores: {ns/pod: {node: 700.0}}   # node-order scores of the pod on each node listed
                                        # (Volcano's ssn.NodeOrderFn after OpenSession, no
                                        # action run): a session opened on the case's objects
                                        # as run_cycle opens it, before the cycle, scoring
                                        # the task with Session.node_scores, the sum allocate
                                        # ranks nodes by; compared within 1e-6
    next:                               # a further cycle on the same cache, for a Go test that
      pods: [...]                       # runs several sessions: its objects (queues, nodes,
      podgroups: [...]                  # podgroups, pods) join the cache the first cycle left
      actions: [enqueue, allocate]      # (binds as Binding tasks), its actions run with the
      expect: {binds: ...}              # case's tiers, and its expect is checked as the case's
    skip: why Sluice does not run it    # a feature Sluice does not have (listed in the README)
    difference: the README's "Differences from Volcano" row that explains …
    sluice: {binds: …}                  # … and what Sluice decides instead (checked)

Volcano's test-only plugins are registered for the cases that name them in their tiers:
``test-rejecter`` (uthelper.RejecterPlugin) rejects, in job enqueueable, the job whose PodGroup
its ``rejectJob`` argument names (the Go literal's RejectJob) and permits any other.

Conventions of Volcano's test helpers kept here: pods get uid ``<ns>-<name>``, the group-name
annotation (also when empty), and are Volcano's (``schedulerName: volcano``); a node without a
``pods`` allocatable holds no pod when the predicates plugin runs (its MaxTaskNum is 0) and any
number otherwise; objects have no creation time, so ties fall to UIDs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler import registry
from scheduler.api.job_info import JobInfo
from scheduler.api.labels import GROUP_NAME_ANNOTATION
from scheduler.api.quantity import parse_resource_list
from scheduler.api.report import QueueReport
from scheduler.api.status import SUCCESS, Code, Status
from scheduler.cache import SchedulerCache
from scheduler.config import SWITCHES, SchedulerConfig
from scheduler.framework.session import Session
from scheduler.framework.writer import Writer
from scheduler.loop import run_cycle
from scheduler.plugins.base import Plugin
from tests.fakes import RecordingClusterClient

VOLCANO_COMMIT = "ed72c7c815a9fd547a787134676f73d42e9d049c"
CASES = Path(__file__).parent / "cases"
UNLIMITED_PODS = "1000000"


@dataclass
class Case:
    file: str  # the YAML file
    source: str  # the Go file
    test: str  # the Go test function
    name: str
    raw: dict

    @property
    def id(self) -> str:
        return f"{self.test}/{self.name}"

    @property
    def skip(self) -> str | None:
        return self.raw.get("skip")

    @property
    def difference(self) -> str | None:
        return self.raw.get("difference")

    def expected(self) -> dict:
        """What Sluice must decide: Volcano's expectation, or Sluice's where it differs."""
        if self.difference:
            return self.raw["sluice"]
        return self.raw.get("expect") or {}


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CASES.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        commit = document.get("commit")
        assert commit == VOLCANO_COMMIT, f"{path.name}: translated from {commit}"
        for entry in document["cases"]:
            cases.append(
                Case(path.name, document["source"], entry.get("test") or document["test"],
                     entry["name"], entry)
            )  # fmt: skip
    return cases


@dataclass
class Outcome:
    binds: dict[str, str]
    evicted: list[str]
    pipelined: dict[str, list[str]]  # job -> nodes its pipelined tasks sit on
    phases: dict[str, str]
    errors: list[str] = field(default_factory=list)
    queues: dict[str, QueueReport] = field(default_factory=dict)
    # podgroup -> condition type -> its status
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # pod -> node -> score
    next: Outcome | None = None  # the case's next cycle, on the same cache


def run(case: Case) -> Outcome:
    with registered_test_plugins(case.raw):
        return _run(case)


def _run(case: Case) -> Outcome:
    raw = case.raw
    config = registry.load(yaml.safe_dump(configuration(raw)), source=f"{case.file}: {case.name}")
    classes = {pc["name"]: int(pc["value"]) for pc in raw.get("priorityClasses") or []}
    cache = SchedulerCache("volcano", priority_classes=classes)
    predicates = any(p.name == "predicates" for tier in config.tiers for p in tier)
    podgroups = fill(cache, raw, predicates=predicates)
    scores = session_scores(cache, config, list(case.expected().get("scores") or {}))
    outcome = cycle(cache, config, podgroups)
    outcome.scores = scores
    if raw.get("next"):
        step = raw["next"]
        config = registry.load(
            yaml.safe_dump(configuration({**raw, "actions": step.get("actions")})),
            source=f"{case.file}: {case.name} (next cycle)",
        )
        podgroups += fill(cache, step, predicates=predicates)
        outcome.next = cycle(cache, config, podgroups)
    return outcome


def fill(cache: SchedulerCache, raw: dict, *, predicates: bool) -> list[dict]:
    """Add the objects ``raw`` lists to ``cache``; the podgroups added."""
    for q in raw.get("queues") or []:
        cache.add_queue(queue(q))
    for n in raw.get("nodes") or []:
        cache.add_node(node(n, predicates=predicates))
    podgroups = [podgroup(pg) for pg in raw.get("podgroups") or []]
    for pg in podgroups:
        cache.add_podgroup(pg)
    for p in raw.get("pods") or []:
        cache.add_pod(pod(p))
    return podgroups


def cycle(cache: SchedulerCache, config: SchedulerConfig, podgroups: list[dict]) -> Outcome:
    client = RecordingClusterClient()
    report = run_cycle(cache, config, client, now=0.0, act=True)
    phases = {key(pg): (pg.get("status") or {}).get("phase", "") for pg in podgroups}
    for call in client.of("patch_podgroup_status"):
        if "phase" in call[2]:
            phases[call[1]] = call[2]["phase"]
    pipelined: dict[str, list[str]] = {}
    for waiting in report.waiting:
        if waiting.state.value == "pipelined":
            pipelined.setdefault(waiting.job, []).append(waiting.node)
    evicted = [c[1] for c in client.of("evict")]
    queues = {q.name: q for q in report.queues}
    conditions = {key(pg): _conditions(pg.get("status") or {}) for pg in podgroups}
    for call in client.of("patch_podgroup_status"):
        if "conditions" in call[2]:
            conditions[call[1]] = _conditions(call[2])
    return Outcome(client.binds(), evicted, pipelined, phases, report.errors, queues, conditions)


def _conditions(status: dict) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or []}


def session_scores(
    cache: SchedulerCache, config: SchedulerConfig, pods: list[str]
) -> dict[str, dict[str, float]]:
    """Each named pod's node-order score per node, on a session opened as run_cycle opens
    one (no action run, nothing written): what ``expect.scores`` checks."""
    if not pods:
        return {}
    writer = Writer(cache, None, act=False)
    ssn = Session(cache.snapshot(), config, writer, 0.0, registry.plugin_tiers(config))
    ssn.open()
    tasks = {f"{t.namespace}/{t.name}": t for j in ssn.jobs.values() for t in j.tasks.values()}
    out = {}
    for name in pods:
        task = tasks.get(name)
        if task is not None:
            scores = ssn.node_scores(task, ssn.matrix.vector(task.fit_req))
            out[name] = {n.name: float(v) for n, v in zip(ssn.node_list, scores, strict=True)}
    return out


class RejecterPlugin(Plugin):
    """Volcano's uthelper.RejecterPlugin: rejects one job's enqueue, permits the others."""

    name = "test-rejecter"
    ARGUMENTS = {"rejectJob": ""}

    def on_session_open(self, ssn: Session) -> None:
        reject = self.arguments.get("rejectJob")

        def enqueueable(job: JobInfo) -> Status:
            if job.podgroup is not None and job.name == reject:
                return Status(Code.ADMISSION_HELD, self.name, f"{self.name} rejects {job.name}")
            return SUCCESS

        ssn.add_job_enqueueable_fn(self, enqueueable)


TEST_PLUGINS: dict[str, type[Plugin]] = {RejecterPlugin.name: RejecterPlugin}


@contextmanager
def registered_test_plugins(raw: dict) -> Iterator[None]:
    """Register the test-only plugins ``raw``'s tiers name, for as long as the case runs."""
    named = {p.get("name") for tier in raw.get("tiers") or [] for p in tier.get("plugins") or []}
    added = {n: TEST_PLUGINS[n] for n in named if n in TEST_PLUGINS and n not in registry.PLUGINS}
    registry.PLUGINS.update(added)
    try:
        yield
    finally:
        for name in added:
            registry.PLUGINS.pop(name, None)


def check(case: Case, outcome: Outcome) -> list[str]:
    """Every way the outcome differs from what the case expects, in words."""
    problems = compare(case.expected(), outcome)
    if outcome.next is not None:
        expect = case.raw["next"].get("expect") or {}
        problems += [f"next cycle: {p}" for p in compare(expect, outcome.next)]
    return problems


def compare(expect: dict, outcome: Outcome) -> list[str]:
    problems = []
    if "binds" in expect and outcome.binds != (expect["binds"] or {}):
        problems.append(f"binds: want {expect['binds']}, got {outcome.binds}")
    if "bindCount" in expect and len(outcome.binds) != expect["bindCount"]:
        problems.append(f"bind count: want {expect['bindCount']}, got {len(outcome.binds)}")
    if "evicted" in expect and sorted(outcome.evicted) != sorted(expect["evicted"] or []):
        problems.append(f"evicted: want {sorted(expect['evicted'] or [])}, got {outcome.evicted}")
    for job, nodes in (expect.get("pipelined") or {}).items():
        got = outcome.pipelined.get(job)
        if not got:
            problems.append(f"pipelined: want job {job} pipelined on {nodes}, got none")
        elif any(n not in nodes for n in got):
            problems.append(f"pipelined: want job {job} on {nodes}, got {got}")
    for job, phase in (expect.get("phases") or {}).items():
        if outcome.phases.get(job) != phase:
            problems.append(f"phase of {job}: want {phase}, got {outcome.phases.get(job)}")
    for name, figures in (expect.get("queues") or {}).items():
        problems += queue_problems(name, figures, outcome.queues.get(name))
    for pg, kinds in (expect.get("conditions") or {}).items():
        have = outcome.conditions.get(pg, {})
        for kind, present in kinds.items():
            if (have.get(kind) == "True") != bool(present):
                state = f"status {have[kind]}" if kind in have else "none"
                problems.append(f"condition {kind} of {pg}: want {present}, got {state}")
    for pod_key, nodes in (expect.get("scores") or {}).items():
        got = outcome.scores.get(pod_key)
        if got is None:
            problems.append(f"scores: pod {pod_key} is not in the session")
            continue
        for node_name, want in nodes.items():
            if node_name not in got or abs(got[node_name] - float(want)) > 1e-6:
                problems.append(
                    f"score of {pod_key} on {node_name}: want {want}, got {got.get(node_name)}"
                )
    return problems


QUEUE_RESOURCE_FIGURES = ("deserved", "allocated")


def queue_problems(name: str, figures: dict, got: QueueReport | None) -> list[str]:
    if got is None:
        return [f"queue {name}: not in the cycle report"]
    problems = []
    for figure in QUEUE_RESOURCE_FIGURES:
        if figure not in figures:
            continue
        want = parse_resource_list(quantities(figures[figure]), obj=f"queue {name}", field=figure)
        have = getattr(got, figure)
        wrong = {r: (v, have.get(r, 0)) for r, v in want.items() if abs(have.get(r, 0) - v) > 1e-6}
        if wrong:
            problems.append(f"queue {name} {figure}: (want, got) in engine units: {wrong}")
    if "share" in figures and abs(got.share - float(figures["share"])) > 1e-9:
        problems.append(f"queue {name} share: want {figures['share']}, got {got.share}")
    return problems


# --- translation of Volcano's test objects -------------------------------------------------


def configuration(raw: dict) -> dict[str, Any]:
    config: dict[str, Any] = {"actions": ", ".join(raw.get("actions") or ["allocate"])}
    config["tiers"] = copy.deepcopy(raw.get("tiers") or [])
    if raw.get("switches", "go") == "go":
        # Go tests build PluginOption literals: an unset switch is nil, and Volcano's
        # isEnabled(nil) is false. A configuration file defaults them to true instead.
        for tier in config["tiers"]:
            for plugin in tier.get("plugins") or []:
                for switch in SWITCHES:
                    plugin.setdefault(switch, False)
    if raw.get("configurations"):
        config["configurations"] = copy.deepcopy(raw["configurations"])
    SchedulerConfig.from_dict(config)  # shape errors surface here, naming the key
    return config


def key(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def quantities(values: dict | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (values or {}).items()}


def queue(q: dict) -> dict:
    spec: dict[str, Any] = {"weight": q.get("weight", 1)}
    for field_name in ("capability", "deserved", "parent", "priority", "reclaimable"):
        if q.get(field_name) is not None:
            value = q[field_name]
            spec[field_name] = quantities(value) if isinstance(value, dict) else value
    if q.get("guarantee"):
        spec["guarantee"] = {"resource": quantities(q["guarantee"])}
    meta: dict[str, Any] = {"name": q["name"]}
    if q.get("annotations"):
        meta["annotations"] = dict(q["annotations"])
    return {"metadata": meta, "spec": spec, "status": {"state": q.get("state", "Open")}}


def node(n: dict, *, predicates: bool) -> dict:
    allocatable = quantities(n.get("allocatable"))
    if "pods" not in allocatable and not predicates:
        allocatable["pods"] = UNLIMITED_PODS  # Volcano checks the pod count in predicates only
    spec: dict[str, Any] = {}
    if n.get("taints"):
        spec["taints"] = copy.deepcopy(n["taints"])
    if n.get("unschedulable"):
        spec["unschedulable"] = True
    return {
        "metadata": {"name": n["name"], "labels": dict(n.get("labels") or {})},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def podgroup(pg: dict) -> dict:
    spec: dict[str, Any] = {
        "queue": pg.get("queue", "default"),
        "minMember": pg.get("minMember", 0),
    }
    if pg.get("minTaskMember") is not None:  # BuildPodGroup's taskMinMember, by task-spec role
        spec["minTaskMember"] = {str(k): int(v) for k, v in pg["minTaskMember"].items()}
    if pg.get("minResources") is not None:
        spec["minResources"] = quantities(pg["minResources"])
    if pg.get("priorityClassName"):
        spec["priorityClassName"] = pg["priorityClassName"]
    ns = pg.get("namespace", "default")
    return {
        "metadata": {"name": pg["name"], "namespace": ns, "uid": f"{ns}-{pg['name']}"},
        "spec": spec,
        "status": {"phase": pg.get("phase", "Pending")},
    }


def pod(p: dict) -> dict:
    ns = p.get("namespace", "default")
    annotations = {GROUP_NAME_ANNOTATION: p.get("group", ""), **(p.get("annotations") or {})}
    # Volcano's tables build pods without an image; kube-apiserver requires one.
    container: dict[str, Any] = {"name": "main", "image": "pause", "resources": {}}
    if p.get("requests"):
        container["resources"]["requests"] = quantities(p["requests"])
    if p.get("limits"):
        container["resources"]["limits"] = quantities(p["limits"])
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [container]}
    if p.get("initContainers"):
        spec["initContainers"] = [
            {"name": f"init-{i}", "image": "pause",
             "resources": {"requests": quantities(c.get("requests"))},
             **({"restartPolicy": c["restartPolicy"]} if c.get("restartPolicy") else {})}
            for i, c in enumerate(p["initContainers"])
        ]  # fmt: skip
    if p.get("node"):
        spec["nodeName"] = p["node"]
    for src, dst in (("nodeSelector", "nodeSelector"), ("tolerations", "tolerations"),
                     ("affinity", "affinity"), ("priority", "priority"),
                     ("priorityClassName", "priorityClassName"),
                     ("preemptionPolicy", "preemptionPolicy"), ("overhead", "overhead")):  # fmt: skip
        if p.get(src) is not None:
            spec[dst] = copy.deepcopy(p[src])
    meta: dict[str, Any] = {
        "name": p["name"],
        "namespace": ns,
        "uid": f"{ns}-{p['name']}",
        "labels": dict(p.get("labels") or {}),
        "annotations": annotations,
    }
    if p.get("deletionTimestamp"):
        meta["deletionTimestamp"] = p["deletionTimestamp"]
    return {"metadata": meta, "spec": spec, "status": {"phase": p.get("phase", "Pending")}}
