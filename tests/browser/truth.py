"""What the cluster's API says, what the dashboard's pages show, and the difference.

``ClusterView`` reads the simulated cluster through the official kubernetes client (as kubectl
would) and derives, independently of the dashboard's code, what each page should show: every
pod of Sluice's scheduler name in the state kubectl shows it in (``expected_state``), each
queue's pods by state, its Queue object's spec as written, the real capability Volcano's
capacity plugin derives from those specs and the nodes, what the queue holds, the namespaces
and their gated pods, the scale-ups the autoscaler recorded on its nodes.

The ``read_*`` functions read a page in the browser (Playwright) into plain data; the
``compare_*`` functions return the differences, in words (empty: the page tells the truth).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from kubernetes import client, config
from kubernetes.utils.quantity import parse_quantity
from playwright.sync_api import Page

SCHEDULER_NAMES = ("volcano",)
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
GATE = "scheduling.volcano.sh/queue-allocation-gate"
SCALE_UP_ANNOTATION = "sim.sluice.io/scale-up"
AUTOSCALER_REASONS = ("TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown")
PENDING = ("Gated", "Unschedulable", "Waiting", "Pipelined")
COUNTED = ("Running", *PENDING)  # the states a queue's figures count
# The Pods page's state filters but Deleted (which lists the pods gone from the cluster).
STATES = (*PENDING, "Binding", "Running", "Terminating", "Succeeded", "Failed")
GI = 1024**3
INF = math.inf


# --- the cluster's API -------------------------------------------------------------------


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    uid: str
    queue: str
    state: str  # as the Pods page names it (Running, Gated, Terminating…)
    node: str  # the node the Pods page shows: bound to, or nominated to (Pipelined)
    phase: str
    cpu: float  # requests, cores
    memory: float  # requests, bytes
    ours: bool  # spec.schedulerName is one of Sluice's
    gated: bool  # carries a scheduling gate
    group: str  # its PodGroup (scheduling.k8s.io/group-name), "" for a pod of its own

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class QueueObject:
    name: str
    parent: str
    capability: dict[str, str]
    deserved: dict[str, str]
    guarantee: dict[str, str]


@dataclass
class ClusterView:
    """One read of the cluster: pods, queues, nodes, namespaces, events."""

    pods: list[PodView]
    queues: dict[str, QueueObject]
    node_allocatable: dict[str, dict[str, float]]
    scale_up_nodes: list[str]
    namespaces: dict[str, bool]  # name -> opted in
    events: Counter  # autoscaler events by reason
    at: float = field(default_factory=time.time)

    @property
    def ours(self) -> list[PodView]:
        return [p for p in self.pods if p.ours]

    def pod(self, key: str) -> PodView | None:
        """The pod of ours called ``namespace/name`` now, None when there is none."""
        return next((p for p in self.ours if p.key == key), None)

    def by_state(self, state: str) -> list[PodView]:
        return [p for p in self.ours if p.state == state]

    def counts(self, queue: str) -> dict[str, int]:
        """The queue's pods by counted state, as the Overview and the queue page count them:
        Running is phase Running (a pod bound but not started yet is in no count) — for a
        queue that does not exist, any pod bound to a node (its row counts the pods as the
        Pods page lists them)."""
        counts = dict.fromkeys(COUNTED, 0)
        for p in self.ours:
            if p.queue != queue:
                continue
            missing = queue not in self.queues and queue != "default"
            if p.state == "Running" and (p.phase == "Running" or missing):
                counts["Running"] += 1
            elif p.state in PENDING:
                counts[p.state] += 1
        return counts

    def used_queues(self) -> set[str]:
        """Queues some pod is counted in or holds resources of (an implicit queue is listed
        while it is used)."""
        return {p.queue for p in self.ours if p.state in COUNTED or self.holds(p)}

    @staticmethod
    def holds(pod: PodView) -> bool:
        """The pod's requests count in its queue's allocated figure (Volcano's
        AllocatedStatus: bound, not finished, not being deleted; and a pipelined pod)."""
        return pod.state in ("Running", "Pipelined")

    def allocated(self, queues: Iterable[str]) -> tuple[float, float]:
        wanted = set(queues)
        held = [p for p in self.ours if p.queue in wanted and self.holds(p)]
        return sum(p.cpu for p in held), sum(p.memory for p in held)

    def listed_queues(self) -> set[str]:
        """The queues the Overview lists: the Queue objects (root aside), "default" while pods
        that name no queue use it (Volcano's implicit default queue), and the queues pods in a
        counted state name that do not exist (``missing_queues``)."""
        names = set(self.queues) - {"root"}
        return names | ({"default"} & self.used_queues()) | self.missing_queues()

    def missing_queues(self) -> set[str]:
        """Queues that pods in a counted state name and the cluster has no Queue object of:
        a row of their own, marked "does not exist", counting those pods."""
        named = {p.queue for p in self.ours if p.state in COUNTED}
        return named - set(self.queues) - {"default"}

    def unlimited(self, queue: str) -> bool:
        """The Queue's CPU or memory capability is at or below zero: Volcano's capacity
        plugin reads it as no limit, and Sluice says so on the queue (CapabilityUnlimited)."""
        obj = self.queues.get(queue)
        return obj is not None and any(
            _amount(r, v) <= 0 for r, v in obj.capability.items() if r in ("cpu", "memory")
        )

    def real_capability(self, queue: str, hierarchy: bool) -> dict[str, float]:
        """The real capability Volcano's capacity plugin derives (capacity.go): flat, the
        cluster's allocatable less every guarantee plus the queue's own, capped by its
        spec.capability; with enableHierarchy, the same from the parent's real capability
        (root's: its spec.capability, else unlimited) and the parent's children. A CPU or
        memory capability at or below zero caps nothing."""
        if not hierarchy:
            total = {r: sum(a.get(r, 0.0) for a in self.node_allocatable.values())
                     for r in ("cpu", "memory")}  # fmt: skip
            guarantees = [self._resources(q.guarantee) for q in self.queues.values()]
            own = self._resources(self.queues[queue].guarantee) if queue in self.queues else {}
            base = {r: max(total[r] - sum(g.get(r, 0) for g in guarantees), 0) + own.get(r, 0)
                    for r in total}  # fmt: skip
            return self._capped(base, queue)
        if queue == "root":
            spec = self._resources(self.queues["root"].capability) if "root" in self.queues else {}
            return {r: spec.get(r, INF) if spec.get(r, 0) > 0 else INF for r in ("cpu", "memory")}
        obj = self.queues.get(queue)
        parent = (obj.parent if obj else "") or "root"
        above = self.real_capability(parent, hierarchy)
        siblings = [
            q for q in self.queues.values() if (q.parent or "root") == parent and q.name != "root"
        ]
        given = {r: sum(self._resources(q.guarantee).get(r, 0) for q in siblings) for r in above}
        own = self._resources(obj.guarantee) if obj else {}
        base = {r: max(above[r] - given[r], 0) + own.get(r, 0) for r in above}
        return self._capped(base, queue)

    def _capped(self, base: dict[str, float], queue: str) -> dict[str, float]:
        obj = self.queues.get(queue)
        cap = self._resources(obj.capability) if obj else {}
        return {r: min(v, cap[r]) if cap.get(r, 0) > 0 else v for r, v in base.items()}

    @staticmethod
    def _resources(written: dict[str, str]) -> dict[str, float]:
        return {k: _amount(k, v) for k, v in written.items() if k in ("cpu", "memory")}


def _amount(resource: str, quantity: object) -> float:
    """A quantity in base units: cores for ``cpu``, bytes for ``memory``."""
    return float(parse_quantity(quantity))


def expected_state(pod) -> str:
    """The state the Pods page must show for ``pod`` (a V1Pod), from what kubectl shows: its
    phase; Terminating while it has a deletionTimestamp; Running once bound to a node (Binding
    is only the moment before the scheduler sees the bind); pending: Gated while it carries a
    scheduling gate, Pipelined while nominated to a node, Unschedulable while its PodScheduled
    condition says so, else Waiting."""
    phase = pod.status.phase or "Pending"
    if phase in ("Succeeded", "Failed"):
        return phase
    if pod.metadata.deletion_timestamp:
        return "Terminating"
    if pod.spec.node_name:
        return "Running"
    if pod.spec.scheduling_gates:
        return "Gated"
    if pod.status.nominated_node_name:
        return "Pipelined"
    for condition in pod.status.conditions or []:
        scheduled = condition.type == "PodScheduled" and condition.status == "False"
        if scheduled and condition.reason == "Unschedulable":
            return "Unschedulable"
    return "Waiting"


def api_client(kubeconfig: str) -> client.ApiClient:
    """A client for the cluster ``kubeconfig`` names that does not retry a refused connection
    (the cluster restarting is read again by the caller, not logged three times a request)."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.retries = False
    return client.ApiClient(configuration)


class Cluster:
    """The simulated cluster through the kubernetes client."""

    def __init__(self, kubeconfig: str) -> None:
        self.api = api_client(kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def close(self) -> None:
        self.api.close()

    def view(self) -> ClusterView:
        timeout = 5
        pods = self.core.list_pod_for_all_namespaces(_request_timeout=timeout).items
        groups = self.custom.list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "podgroups", _request_timeout=timeout
        )["items"]
        group_queue = {
            (g["metadata"]["namespace"], g["metadata"]["name"]): (g.get("spec") or {}).get("queue")
            or "default"
            for g in groups
        }
        queues = {}
        for q in self.custom.list_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", _request_timeout=timeout
        )["items"]:
            spec = q.get("spec") or {}
            name = q["metadata"]["name"]
            queues[name] = QueueObject(
                name,
                spec.get("parent") or ("" if name == "root" else "root"),
                {k: str(v) for k, v in (spec.get("capability") or {}).items()},
                {k: str(v) for k, v in (spec.get("deserved") or {}).items()},
                {k: str(v) for k, v in ((spec.get("guarantee") or {}).get("resource") or {}).items()},
            )  # fmt: skip
        nodes = self.core.list_node(_request_timeout=timeout).items
        namespaces = {
            ns.metadata.name: (ns.metadata.labels or {}).get(GATE) == "true"
            for ns in self.core.list_namespace(_request_timeout=timeout).items
        }
        events = Counter(
            e.reason
            for e in self.core.list_event_for_all_namespaces(_request_timeout=timeout).items
            if e.reason in AUTOSCALER_REASONS
        )
        return ClusterView(
            pods=[self._pod(p, group_queue) for p in pods],
            queues=queues,
            node_allocatable={
                n.metadata.name: {
                    r: _amount(r, v)
                    for r, v in (n.status.allocatable or {}).items()
                    if r in ("cpu", "memory")
                }
                for n in nodes
            },
            scale_up_nodes=sorted(
                n.metadata.name
                for n in nodes
                if SCALE_UP_ANNOTATION in (n.metadata.annotations or {})
            ),
            namespaces=namespaces,
            events=events,
        )

    @staticmethod
    def _pod(pod, group_queue: dict) -> PodView:
        annotations = pod.metadata.annotations or {}
        group = annotations.get(GROUP_ANNOTATION)
        if group and (pod.metadata.namespace, group) in group_queue:
            queue = group_queue[(pod.metadata.namespace, group)]
        else:
            queue = annotations.get(QUEUE_ANNOTATION) or "default"
        state = expected_state(pod)
        if state == "Pipelined":
            node = pod.status.nominated_node_name
        elif state in ("Gated", "Unschedulable", "Waiting"):
            node = ""
        else:
            node = pod.spec.node_name or ""
        cpu = memory = Decimal(0)
        for container in pod.spec.containers or []:
            requests = (container.resources.requests if container.resources else None) or {}
            cpu += parse_quantity(requests.get("cpu", 0))
            memory += parse_quantity(requests.get("memory", 0))
        return PodView(
            pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, queue, state, node,
            pod.status.phase or "Pending", float(cpu), float(memory),
            pod.spec.scheduler_name in SCHEDULER_NAMES, bool(pod.spec.scheduling_gates),
            group or "",
        )  # fmt: skip


class PodRecorder:
    """Every pod the cluster has had while the walk ran, by UID (listed once a second): a pod
    that is no longer listed is gone, and the Pods page's Deleted filter must list it once."""

    def __init__(self, kubeconfig: Callable[[], str]) -> None:
        self.kubeconfig = kubeconfig
        self.seen: dict[str, tuple[str, bool]] = {}  # uid -> (namespace/name, ours)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="pod-recorder")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)

    def record(self, pods: Iterable[PodView]) -> None:
        with self.lock:
            for p in pods:
                self.seen.setdefault(p.uid, (p.key, p.ours))

    def gone(self, now: Iterable[PodView]) -> Counter:
        """Names of the pods of ours gone from the cluster, once per pod (UID)."""
        there = {p.uid for p in now}
        with self.lock:
            return Counter(k for uid, (k, ours) in self.seen.items() if ours and uid not in there)

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                api = api_client(self.kubeconfig())
                try:
                    core = client.CoreV1Api(api)
                    while not self.stopped.is_set():
                        items = core.list_pod_for_all_namespaces(_request_timeout=3).items
                        with self.lock:
                            for p in items:
                                self.seen.setdefault(
                                    p.metadata.uid,
                                    (f"{p.metadata.namespace}/{p.metadata.name}",
                                     p.spec.scheduler_name in SCHEDULER_NAMES),
                                )  # fmt: skip
                        self.stopped.wait(0.5)
                finally:
                    api.close()
            except Exception:  # the cluster restarting: list again once it answers
                self.stopped.wait(0.5)


# --- the pages ---------------------------------------------------------------------------


def text(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def read_pods_page(page: Page, base: str | None, state: str = "") -> tuple[list[tuple], int]:
    """Every row of the Pods page (every page of it) as (namespace/name, queue, state, node),
    and the count its pager says (``base`` None: the page as it is now, refreshed by htmx, not
    loaded again)."""
    url = f"{base}/pods/" + (f"?state={state}" if state else "") if base is not None else ""
    rows: list[tuple] = []
    said = 0
    while True:
        if url:
            page.goto(url)
        rows += page.locator("table.pods tbody tr").evaluate_all(
            """rows => rows.map(r => {
                const cells = r.querySelectorAll('td');
                const queue = cells[1].querySelector('a');
                return [cells[0].innerText.trim(), queue ? queue.innerText.trim() : '',
                        r.dataset.state, cells[3].innerText.trim()];
            })"""
        )
        pager = page.locator("nav.pager span")
        if pager.count():
            match = re.search(r"\((\d+) pods?\)", pager.inner_text())
            said = int(match.group(1)) if match else -1
        following = page.locator('nav.pager a[rel="next"]')
        if base is None or not following.count():
            return [tuple(r) for r in rows], said
        url = base + "/pods/" + following.get_attribute("href")


def read_overview(page: Page, base: str | None) -> dict[str, dict]:
    """Each queue row of the Overview: counts by column, bar texts by resource, spec line
    (``base`` None: the page as it is now, refreshed by htmx, not loaded again)."""
    if base is not None:
        page.goto(base + "/")
    return page.evaluate(
        """() => {
            const heads = [...document.querySelectorAll('table.queues thead th')].map(
                th => th.innerText.trim().split('\\n')[0].trim());
            const out = {};
            for (const tr of document.querySelectorAll('table.queues tbody tr[data-queue]')) {
                const cells = [...tr.children];
                const row = {counts: {}, bars: {}, spec: '', implicit: false, errors: []};
                cells.forEach((cell, i) => {
                    if (['Running', 'Gated', 'Waiting', 'Pipelined', 'Unschedulable'].includes(heads[i]))
                        row.counts[heads[i]] = parseInt(cell.innerText.trim(), 10);
                });
                for (const bar of tr.querySelectorAll('.bar-row'))
                    row.bars[bar.querySelector('.bar-label').innerText.trim()] =
                        bar.querySelector('.bar-text').innerText.trim();
                const spec = tr.querySelector('.spec-line');
                row.spec = spec ? spec.innerText.trim() : '';
                row.implicit = !!tr.querySelector('.implicit');
                const missing = tr.querySelector('th .missing-queue');
                row.missing = missing ? missing.innerText.trim() : '';
                row.errors = [...tr.querySelectorAll('.queue-error')].map(e => e.innerText.trim());
                out[tr.dataset.queue] = row;
            }
            return out;
        }"""
    )


def read_queue_tree(page: Page, base: str) -> dict[str, dict]:
    page.goto(base + "/queues/")
    return page.evaluate(
        """() => {
            const out = {};
            for (const tr of document.querySelectorAll('table.tree tbody tr[data-queue]')) {
                const cells = [...tr.children].map(c => c.innerText.trim());
                out[tr.dataset.queue] = {
                    depth: parseInt(tr.dataset.depth, 10), implicit: !!tr.querySelector('.implicit'),
                    missing: (tr.querySelector('th .missing-queue') || {}).innerText || '',
                    capability: cells[1], deserved: cells[2], guarantee: cells[3],
                    real_capability: cells[4], derived_deserved: cells[5], allocated: cells[6],
                    how: (tr.querySelector('.derived-capability .derived') || {}).title || '',
                    errors: [],
                };
            }
            for (const tr of document.querySelectorAll('table.tree tr[data-errors-of]'))
                out[tr.dataset.errorsOf].errors = [...tr.querySelectorAll('[data-reason]')].map(
                    e => e.dataset.reason);
            return out;
        }"""
    )


def read_queue_page(page: Page, base: str, name: str) -> dict:
    """A queue's page: its counts line, its pods by state, the derived capability."""
    response = page.goto(f"{base}/queues/{name}/")
    data = page.evaluate(
        """() => {
            const live = document.querySelector('#live');
            const groups = {};
            for (const s of live.querySelectorAll('section.pod-group')) {
                const count = s.querySelector('.count');
                groups[s.dataset.state] = {
                    count: count ? parseInt(count.innerText.replace(/[()]/g, ''), 10) : 0,
                    pods: [...s.querySelectorAll('tbody tr td:first-child')].map(td => td.innerText.trim()),
                    reasons: [...s.querySelectorAll('tbody tr td.reason')].map(td => td.innerText.trim()),
                };
            }
            const line = [...live.querySelectorAll('p')].map(p => p.innerText).find(
                t => t.includes('running') && t.includes('unschedulable')) || '';
            const spec = {};
            for (const tr of live.querySelectorAll('table.queue-spec tbody tr'))
                spec[tr.querySelector('th').innerText.trim()] =
                    [...tr.querySelectorAll('td')].map(td => td.innerText.trim());
            return {groups, line, spec, text: live.innerText};
        }"""
    )
    data["status"] = response.status if response else 0
    counts = {}
    for state in COUNTED:
        match = re.search(rf"{state.lower()} (\d+)", data["line"])
        counts[state] = int(match.group(1)) if match else None
    data["counts"] = counts
    return data


def read_pod_page(page: Page, base: str | None, key: str = "", uid: str = "") -> dict:
    """A pod's page: its "Now" lines, UID, timeline, other pods of its name (``base`` None:
    the page as it is now, refreshed by htmx, not loaded again)."""
    status = 200
    if base is not None:
        namespace, name = key.split("/", 1)
        response = page.goto(f"{base}/pods/{namespace}/{name}/" + (f"?uid={uid}" if uid else ""))
        status = response.status if response else 0
    data = page.evaluate(
        """() => ({
            now: [...document.querySelectorAll('.pod-now')].map(p => p.innerText.trim()),
            uid: (document.querySelector('.pod-uid code') || {}).innerText || '',
            timeline: [...document.querySelectorAll('ol.timeline li')].map(li => ({
                kind: li.querySelector('strong').innerText.trim(), text: li.innerText.trim()})),
            others: [...document.querySelectorAll('ul.other-pods li')].map(li => li.innerText.trim()),
        })"""
    )
    data["status"] = status
    return data


def read_namespaces(page: Page, base: str) -> dict[str, tuple[bool, int]]:
    page.goto(base + "/namespaces/")
    rows = page.locator("table.namespaces tbody tr").evaluate_all(
        """rows => rows.map(r => [r.dataset.namespace,
                                  !!r.querySelector('.badge.ok'),
                                  parseInt(r.querySelectorAll('td')[1].innerText.trim(), 10)])"""
    )
    return {name: (opted, gated) for name, opted, gated in rows}


def read_scheduler(page: Page, base: str) -> dict[str, str]:
    page.goto(base + "/scheduler/")
    return page.evaluate(
        """() => {
            const out = {};
            for (const dl of document.querySelectorAll('dl.config'))
                for (const dt of dl.querySelectorAll('dt'))
                    out[dt.innerText.trim()] = dt.nextElementSibling.innerText.trim();
            out.banner = (document.querySelector('.scheduler-line') || {}).innerText || '';
            out.stopped = !!document.querySelector('#scheduler-stopped');
            out.failing = !!document.querySelector('#cycle-failure');
            return out;
        }"""
    )


def read_autoscaler(page: Page, base: str) -> dict:
    page.goto(base + "/autoscaler/")
    return page.evaluate(
        """() => ({
            nodes: [...document.querySelectorAll('table.scale-ups tbody tr')].map(
                r => r.querySelectorAll('td')[2].innerText.split('/').pop().trim()),
            events: [...document.querySelectorAll('table.events tbody tr')].map(
                r => r.querySelectorAll('td')[1].innerText.trim()),
            error: (document.querySelector('#live .alert.error') || {}).innerText || '',
        })"""
    )


def read_history(page: Page, base: str) -> dict[str, float]:
    """The latest value of each series in the History page's summary table."""
    page.goto(base + "/history/")
    rows = page.locator("table.chart-summary tbody tr").evaluate_all(
        "rows => rows.map(r => [r.querySelector('th').innerText.trim(),"
        " r.querySelector('td').innerText.trim()])"
    )
    return {name: float(value) if value not in ("", "None") else math.nan for name, value in rows}


def read_risks(page: Page, base: str) -> dict[str, list[tuple[str, str]]]:
    page.goto(base + "/risks/")
    return page.evaluate(
        """() => {
            const out = {};
            for (const s of document.querySelectorAll('section.risk-group'))
                out[s.dataset.risk] = [...s.querySelectorAll('tbody tr')].map(r => {
                    const c = r.querySelectorAll('td');
                    return [c[0].innerText.trim(), c[1].innerText.trim().split(/\\s/)[0]];
                });
            return out;
        }"""
    )


# --- comparisons -------------------------------------------------------------------------


def parse_amounts(words: str) -> dict[str, float]:
    """``24 CPU, 96Gi`` / ``unlimited CPU, unlimited memory`` -> cores and bytes."""
    out: dict[str, float] = {}
    for part in words.split(","):
        part = part.strip()
        if part == "unlimited CPU":
            out["cpu"] = INF
        elif part == "unlimited memory":
            out["memory"] = INF
        elif m := re.fullmatch(r"([\d.]+) CPU", part):
            out["cpu"] = float(m.group(1))
        elif m := re.fullmatch(r"([\d.]+)Gi", part):
            out["memory"] = float(m.group(1)) * GI
    return out


def parse_written(words: str) -> dict[str, str]:
    """``cpu: 48, memory: 256Gi`` (or ``not set``) -> {"cpu": "48", "memory": "256Gi"}; a
    capability shown as no limit, ``cpu: unlimited (spec says -5)``, is what the spec says."""
    if not words or words.startswith("not set"):
        return {}
    pairs = (part.strip().split(": ", 1) for part in words.split(", "))
    return {k: re.sub(r"^.*\(spec says (.*)\)$", r"\1", v) for k, v in pairs}


def close(a: float, b: float, resource: str) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    # The pages round to a tenth of a core or of a GiB.
    return abs(a - b) <= (0.051 if resource == "cpu" else 0.051 * GI)


def amounts_differ(page: dict[str, float], api: dict[str, float]) -> list[str]:
    return [
        f"{r}: page {page.get(r)} vs API {api.get(r)}"
        for r in ("cpu", "memory")
        if not close(page.get(r, 0.0), api.get(r, 0.0), r)
    ]


def compare_pods(rows: list[tuple], said: int, view: ClusterView, state: str = "") -> list[str]:
    """The Pods page (optionally filtered by ``state``) against the API's pods of ours."""
    pods = view.by_state(state) if state else view.ours
    expected = Counter((p.key, p.queue, p.state, p.node) for p in pods)
    shown = Counter(rows)
    out = []
    for row, n in (shown - expected).items():
        out.append(f"page shows {n}x {row} that the API does not have")
    for row in (expected - shown).elements():
        near = [r for r in shown if r[0] == row[0]]
        out.append(f"API has {row}, page does not (page shows {near or 'nothing'} for it)")
    if said != len(rows) and rows:
        out.append(f"the pager says {said} pods, the page lists {len(rows)}")
    return out


def compare_deleted(rows: list[tuple], gone: Counter) -> list[str]:
    shown = Counter(r[0] for r in rows)
    out = []
    for key, n in (shown - gone).items():
        out.append(f"Deleted lists {key} {n} more time(s) than pods of that name are gone")
    for key, n in (gone - shown).items():
        out.append(f"{n} pod(s) {key} gone from the cluster, not listed as Deleted")
    states = {r[2] for r in rows} - {"Deleted"}
    if states:
        out.append(f"Deleted filter shows rows in states {sorted(states)}")
    return out


def compare_overview(shown: dict[str, dict], view: ClusterView, hierarchy: bool) -> list[str]:
    out = []
    expected = view.listed_queues()
    if set(shown) != expected:
        out.append(f"queues listed {sorted(shown)}, API's (Queue objects, used implicit ones) "
                   f"{sorted(expected)}")  # fmt: skip
    for name in sorted(set(shown) & expected):
        row = shown[name]
        counts = view.counts(name)
        if row["counts"] != counts:
            out.append(f"{name}: counts {row['counts']} vs API {counts}")
        obj = view.queues.get(name)
        said = any("CapabilityUnlimited" in e for e in row["errors"])
        if said != view.unlimited(name):
            out.append(f"{name}: says CapabilityUnlimited: {said}; Queue capability "
                       f"{obj.capability if obj else None}")  # fmt: skip
        missing = name in view.missing_queues()
        if row["implicit"] != (obj is None and not missing):
            out.append(
                f"{name}: implicit badge {row['implicit']}, Queue object exists: {obj is not None}"
            )
        if (row["missing"] == "does not exist") != missing:
            out.append(f"{name}: marked {row['missing']!r}; Queue object exists: {obj is not None}")
        if missing:
            if row["bars"]:
                out.append(f"{name}: a queue that does not exist has bars {row['bars']}")
            continue
        if obj is not None:
            spec = row["spec"].removeprefix("spec, as written: ")
            parts = dict(p.split(" ", 1) for p in spec.split(" · ")) if spec else {}
            for field_name in ("capability", "deserved", "guarantee"):
                written = parse_written(parts.get(field_name, ""))
                if written != getattr(obj, field_name):
                    out.append(f"{name}: spec {field_name} shown {written}, "
                               f"Queue object {getattr(obj, field_name)}")  # fmt: skip
        real = view.real_capability(name, hierarchy)
        cpu_used, mem_used = view.allocated([name])
        for resource, api_real, used in (
            ("cpu", real["cpu"], cpu_used),
            ("memory", real["memory"], mem_used),
        ):
            label = {"cpu": "cpu", "memory": "memory"}[resource]
            bar = row["bars"].get(label, "")
            if not bar:
                if used or not math.isinf(api_real):
                    out.append(
                        f"{name}: no {label} bar; API: allocated {used}, real capability {api_real}"
                    )
                continue
            m = re.search(r"real capability (unlimited|[\d.]+ CPU|[\d.]+Gi)", bar)
            page_real = parse_amounts(
                m.group(1)
                if m and m.group(1) != "unlimited"
                else f"unlimited {'CPU' if resource == 'cpu' else 'memory'}"
            )
            out += [
                f"{name} bar: real capability {d}"
                for d in amounts_differ(page_real, {resource: api_real})
                if d.startswith(resource)
            ]
            m = re.search(r"allocated ([\d.]+ CPU|[\d.]+Gi)", bar)
            page_used = parse_amounts(m.group(1)).get(resource, 0.0) if m else 0.0
            if not close(page_used, used, resource):
                out.append(
                    f"{name} bar: allocated {resource} page {page_used} vs API {used} ({bar!r})"
                )
    return out


def compare_queue_tree(shown: dict[str, dict], view: ClusterView, hierarchy: bool) -> list[str]:
    out = []
    expected = view.listed_queues() | {"root"}
    if set(shown) != expected:
        out.append(f"tree lists {sorted(shown)}, API's {sorted(expected)}")
    for name in sorted(set(shown) & expected):
        row, obj = shown[name], view.queues.get(name)
        if ("CapabilityUnlimited" in row["errors"]) != view.unlimited(name):
            out.append(f"{name}: errors {row['errors']}; Queue capability "
                       f"{obj.capability if obj else None}")  # fmt: skip
        if obj is not None:
            for field_name in ("capability", "deserved", "guarantee"):
                written = parse_written(row[field_name])
                if written != getattr(obj, field_name):
                    out.append(f"{name}: spec {field_name} shown {written!r}, Queue object "
                               f"{getattr(obj, field_name)}")  # fmt: skip
        elif name in view.missing_queues():
            if row["missing"] != "does not exist" or row["real_capability"] != "–":
                out.append(f"{name}: no Queue object, pods name it: row {row}")
            continue
        elif not row["implicit"]:
            out.append(f"{name}: no Queue object, not marked implicit")
        real = view.real_capability(name, hierarchy)
        if row["real_capability"] in ("–", ""):
            out.append(f"{name}: no real capability shown; API derives {real}")
        else:
            out += [
                f"{name}: real capability {d}"
                for d in amounts_differ(parse_amounts(row["real_capability"]), real)
            ]
        members = [name] if name != "root" else list(view.listed_queues() | set(view.queues))
        cpu, memory = view.allocated(members)
        page_used = parse_amounts(row["allocated"]) if row["allocated"] != "none" else {}
        out += [
            f"{name}: allocated {d}"
            for d in amounts_differ(page_used, {"cpu": cpu, "memory": memory})
        ]
    return out


def compare_queue_page(data: dict, name: str, view: ClusterView, hierarchy: bool) -> list[str]:
    """A queue's page: its counts, its waiting pods by state, its spec as written and the real
    capability derived from it."""
    out = []
    if data["status"] != 200:
        out.append(f"/queues/{name}/ answered {data['status']}")
        return out
    obj = view.queues.get(name)
    if obj is not None:
        for field_name in ("capability", "deserved", "guarantee"):
            written = parse_written(data["spec"].get(field_name.capitalize(), [""])[0])
            if written != getattr(obj, field_name):
                out.append(f"{name} page: spec {field_name} shown {written}, Queue object "
                           f"{getattr(obj, field_name)}")  # fmt: skip
    derived = data["spec"].get("Capability", ["", ""])[-1]
    real = view.real_capability(name, hierarchy)
    words = derived.removeprefix("real capability ").removesuffix(" (derived)")
    out += [f"{name} page: real capability {d} ({derived!r})"
            for d in amounts_differ(parse_amounts(words), real)]  # fmt: skip
    counts = view.counts(name)
    if data["counts"] != counts:
        out.append(f"{name}: counts line {data['line']!r} vs API {counts}")
    for state in PENDING:
        group = data["groups"].get(state, {"count": 0, "pods": []})
        pods = sorted(p.key for p in view.by_state(state) if p.queue == name)
        if group["count"] != len(pods) or sorted(group["pods"]) != pods[:50]:
            out.append(f"{name}: {state} section lists {group['count']} {sorted(group['pods'])}, "
                       f"API {len(pods)} {pods}")  # fmt: skip
    return out


def compare_missing_queue(data: dict, name: str, view: ClusterView) -> list[str]:
    """The page of a queue that pods name and the cluster does not have: it says so (200, not
    a 404) and lists those pods, gated (they keep their gate until the queue exists)."""
    out = []
    if data["status"] != 200 or f"Queue {name} does not exist" not in data["text"]:
        out.append(f"/queues/{name}/ ({data['status']}) does not say the queue does not exist")
    naming = sorted(p.key for p in view.ours if p.queue == name and p.state in PENDING)
    listed = sorted(k for g in data["groups"].values() for k in g["pods"])
    if listed != naming:
        out.append(f"/queues/{name}/ lists {listed}; pods naming it in the API: {naming}")
    for reason in (r for g in data["groups"].values() for r in g["reasons"]):
        if "queue capacity" in reason or f"queue {name} does not exist" not in reason:
            out.append(f"/queues/{name}/: a pod waits, it says, {reason!r}")
    return out


def compare_pod_page(data: dict, pod: PodView | None, key: str) -> list[str]:
    """``pod`` None: the pod is gone from the cluster."""
    out = []
    if len(data["now"]) != 1:
        out.append(f"{key}: {len(data['now'])} 'Now' lines: {data['now']}")
        return out
    now = data["now"][0]
    if pod is None:
        if not now.startswith("Deleted"):
            out.append(f"{key}: gone from the cluster, the page says {now!r}")
        return out
    if data["uid"] != pod.uid:
        out.append(f"{key}: page shows UID {data['uid']}, the API's pod is {pod.uid}")
    if not now.startswith(f"Now: {pod.state} in queue {pod.queue}"):
        out.append(f"{key}: page says {now!r}, API: {pod.state} in queue {pod.queue}")
    if pod.node and pod.state != "Pipelined" and f"on {pod.node}" not in now:
        out.append(f"{key}: page says {now!r}, API: on {pod.node}")
    return out


def compare_namespaces(shown: dict[str, tuple[bool, int]], view: ClusterView) -> list[str]:
    out = []
    if set(shown) != set(view.namespaces):
        out.append(f"namespaces {sorted(shown)} vs API {sorted(view.namespaces)}")
    for name in sorted(set(shown) & set(view.namespaces)):
        gated = sum(1 for p in view.ours if p.namespace == name and p.state == "Gated")
        expected = (view.namespaces[name], gated)
        if shown[name] != expected:
            out.append(f"namespace {name}: page (opted in, gated) {shown[name]} vs API {expected}")
    return out


def compare_autoscaler(shown: dict, view: ClusterView) -> list[str]:
    out = []
    if shown["error"]:
        out.append(f"autoscaler page error: {shown['error']}")
    if sorted(shown["nodes"]) != view.scale_up_nodes:
        out.append(f"scale-ups on {sorted(shown['nodes'])}, API nodes with a scale-up record "
                   f"{view.scale_up_nodes}")  # fmt: skip
    events = Counter(shown["events"])
    if events != view.events:
        out.append(f"autoscaler events {dict(events)} vs API {dict(view.events)}")
    return out


def compare_history(latest: dict[str, float], view: ClusterView) -> list[str]:
    """The History page's latest pods-by-state figures: the latest cycle's counts."""
    out = []
    totals = Counter()
    for queue in view.listed_queues() | set(view.queues):
        totals.update(view.counts(queue))
    for state in COUNTED:
        shown = latest.get(f"{state.lower()} pods")
        if shown is None or shown != totals[state]:
            out.append(f"History: latest {state.lower()} pods {shown}, API {totals[state]}")
    return out


def compare_risks(shown: dict[str, list], view: ClusterView) -> list[str]:
    """Every workload at risk exists — a pod of its own, or a PodGroup's pods — and is not
    wholly running (risks are judged for Pending, or admitted but not yet running,
    workloads)."""
    out = []
    for risk, rows in shown.items():
        for workload, queue in rows:
            namespace, name = workload.split("/", 1)
            members = [
                p
                for p in view.ours
                if p.namespace == namespace
                and (p.group == name or (not p.group and p.name == name))
            ]
            if not members:
                out.append(f"Risks ({risk}): {workload} in {queue}: no such pod or gang")
            elif all(p.state in ("Running", "Succeeded", "Failed", "Terminating") for p in members):
                out.append(f"Risks ({risk}): {workload}: every pod is {[p.state for p in members]}")
    return out
