"""The simulation test's invariants, checked after every cycle against the cluster's store.

Each is computed from the cluster's objects, independently of the scheduler's own figures
(the scheduler's report says what it decided; the store says what happened):

1. no pod bound twice or to two nodes; no node over its allocatable on any resource
   (Kubernetes' pod request formula: ``simcluster.podutil.pod_requests``);
2. no queue's allocated + reserved (gate reservations) above its capability, at any level of
   the hierarchy (a queue's whole subtree against its own ``spec.capability``) — checked when
   the figure grew in the cycle, so a capability lowered under running pods is not a fault.
   A reservation recorded on a pod (``sluice.io/queue-reservation-since``) before the cycle
   counts only if the scheduler's design holds it at session open (``held_reservations``,
   after ``GateReservations.load``): job by job, the oldest first, each only if its open queue
   still has room at every level for it and what its gang still lacks; one that no longer
   fits (its queue closed, its capability lowered) holds nothing and its pods compete as any
   other. A reservation recorded during the cycle always counts;
3. no pod that waits only for its queue carries ``PodScheduled=False`` reason ``Unschedulable``
   (``tests.invariants.check_cycle``, checked after every cycle of every test); every pod the
   scheduler finds fits no node gets it within ``UNSCHEDULABLE_WITHIN`` cycles;
4. a gated pod whose queue has room and that fits a Ready, untainted node is ungated within
   ``UNGATED_WITHIN`` cycles (pods without node constraints, not in a gang). Room is what the
   capability leaves beside what is allocated and what every pod let through its gate holds,
   reservation or not: an admitted job's request counts in its queue's inqueue figure (Volcano's
   capacity plugin counts an Inqueue job's minResources) even once the capability was lowered
   under it;
5. a pipelined decision ends (bound or released) within ``PIPELINE_WITHIN`` cycles; no pending
   pod keeps a ``nominatedNodeName`` the scheduler no longer reports pipelined for more than
   ``NOMINATION_WITHIN`` cycles whose status write, if any, the API did not refuse;
6. gang all-or-nothing: no PodGroup holds fewer than minMember placed pods — bound, or
   pipelined (the scheduler's live decision to bind it on a node being freed: Volcano's gang
   plugin counts these toward the gang, JobPipelined, and its pipeline cache persistence
   design commits a pipelined gang's allocated members) — unless it had them all before,
   lost a member to a deletion, or has a pending member whose bind the API refused (binds are
   one call per pod; Volcano binds the others and retries the refused one);
7. no cycle raises; every pod of ours in the cluster is in the cycle's report (waiting with a
   status, or in its inventory), and a pending pod without a gate carries a PodScheduled
   condition (a reason) within ``REASON_WITHIN`` cycles whose status write, if any, the API
   did not refuse (a refused write is retried the next cycle);
8. with gates on, the simulated Cluster Autoscaler and Karpenter make no false scale-up —
   but for one whose every triggering pod's queue the workload changed at that very step
   (after the cycle that wrote their conditions, before the autoscaler's loop).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from scheduler.api.helpers import reservation_since
from scheduler.api.labels import (
    GROUP_NAME_ANNOTATION,
    QUEUE_ALLOCATION_GATE,
    QUEUE_RESERVATION_ANNOTATION,
)
from scheduler.api.quantity import parse_resource_list
from scheduler.api.report import CycleReport, PodState
from scheduler.plugins.gate_reservations import CLOCK_SKEW, RESERVATION_TIMEOUT
from simcluster.podutil import (
    add,
    fits,
    is_finished,
    meta,
    node_allocatable,
    pod_queue,
    pod_requests,
    podgroup_queues,
)
from simcluster.store import Store
from tests.invariants import NOT_FOR_NODES, store_conditions

UNSCHEDULABLE_WITHIN = 3
UNGATED_WITHIN = 15
PIPELINE_WITHIN = 150  # the victims' grace periods (30 s) + pipelineMargin (60 s) + slack
NOMINATION_WITHIN = 3
REASON_WITHIN = 3
EPSILON = 1e-6

NAMES = {
    1: "no double binding, no node over its allocatable",
    2: "no queue over its capability",
    3: "Unschedulable only for node shortfalls, and then within a bound",
    4: "a gated pod with room is ungated",
    5: "pipelined decisions end; no stale nominatedNodeName",
    6: "gang all-or-nothing",
    7: "no cycle raises; every pod accounted for",
    8: "no false scale-up with gates on",
}


@dataclass(frozen=True)
class Violation:
    invariant: int
    message: str
    objects: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return NAMES[self.invariant]

    @property
    def key(self) -> tuple:
        return (self.invariant, self.objects)


def _ref(pod: dict) -> str:
    return f"pod/{meta(pod).get('namespace')}/{meta(pod).get('name')}"


def _gated(pod: dict) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == QUEUE_ALLOCATION_GATE for g in gates)


def _bound(pod: dict) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _opted_in(pod: dict) -> bool:
    return (meta(pod).get("annotations") or {}).get(QUEUE_ALLOCATION_GATE) == "true"


def _recorded_reservation(pod: dict, now: float) -> float | None:
    """When the reservation recorded on ``pod`` began, if the scheduler would take it up
    (``GateReservations._recorded_pass``, ``expire``): an opted-in pending pod, ungated or
    gated by our gate alone (its removal on its way), stamped no later than the scheduler's
    clock allows and not longer ago than the reservation timeout."""
    if _bound(pod) or is_finished(pod) or meta(pod).get("deletionTimestamp"):
        return None
    if not _opted_in(pod):
        return None
    gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
    if gates and gates != [QUEUE_ALLOCATION_GATE]:
        return None
    since = reservation_since(pod)
    if since is None or since > now + CLOCK_SKEW or now - since >= RESERVATION_TIMEOUT:
        return None
    return since


def held_reservations(store: Store, now: float) -> tuple[set[str], set[str]]:
    """The pods whose recorded reservation the scheduler holds when its session opens on
    ``store``, and every pod with a recorded reservation. As ``GateReservations.load``: the
    jobs with recorded reservations, the oldest first (then priority, creation, job), each
    held only if its queue is open and, at the queue and every ancestor with a capability, what
    is allocated + the reservations held so far + what the job still needs (its reserved pods
    and, when its gang lacks members, its smallest pending others) stays within the capability
    on each dimension that need asks for (pods never limit a queue)."""
    queues = {meta(q)["name"]: q for q in store.list("queues")[0]}
    parent = {name: (q.get("spec") or {}).get("parent") or "root" for name, q in queues.items()}
    groups = {(meta(g)["namespace"], meta(g)["name"]): g for g in store.list("podgroups")[0]}
    classes = {meta(c)["name"]: int(c.get("value") or 0) for c in store.list("priorityclasses")[0]}
    queue_of = podgroup_queues(store)

    def chain(queue: str) -> list[str]:
        out: list[str] = []
        while queue in queues and queue not in out:
            out.append(queue)
            queue = parent[queue]
        return out

    capability: dict[str, dict[str, float]] = {}
    for name, queue in queues.items():
        raw = (queue.get("spec") or {}).get("capability") or {}
        try:
            parsed = parse_resource_list(raw, obj=f"queue {name}", field="capability")
        except ValueError:
            continue
        capability[name] = {r: float(v) for r, v in parsed.items() if v > 0}
    allocated: dict[str, dict[str, float]] = defaultdict(dict)
    jobs: dict[str, list[dict]] = defaultdict(list)
    for pod in store.list("pods")[0]:
        deleting = bool(meta(pod).get("deletionTimestamp"))
        if _bound(pod) and not is_finished(pod) and not deleting:
            for level in chain(pod_queue(pod, queue_of)):
                add(allocated[level], pod_requests(pod))
        group = (meta(pod).get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        namespace = meta(pod)["namespace"]
        jobs[f"{namespace}/{group}" if group else f"{namespace}/pod:{meta(pod).get('uid')}"].append(
            pod
        )
    claims, stamped = [], set()
    for job, members in jobs.items():
        reserved = [(p, t) for p in members if (t := _recorded_reservation(p, now)) is not None]
        stamped.update(_ref(p) for p, _ in reserved)
        if not reserved:
            continue
        group = groups.get((meta(members[0])["namespace"], job.split("/", 1)[1]))
        if group is not None:
            spec = group.get("spec") or {}
            minimum = int(spec.get("minMember") or 1)
            priority = classes.get(str(spec.get("priorityClassName") or ""), 0)
            creation = meta(group).get("creationTimestamp") or ""
        else:
            pod_spec = members[0].get("spec") or {}
            minimum = 1
            priority = int(pod_spec.get("priority") or 0)
            creation = meta(members[0]).get("creationTimestamp") or ""
        need: dict[str, float] = {}
        for pod, _ in reserved:
            add(need, pod_requests(pod))
        ready = sum(1 for p in members if _bound(p) and not meta(p).get("deletionTimestamp"))
        pending = [p for p in members if not _bound(p) and not is_finished(p)]
        pipelined = sum(1 for p in pending if (p.get("status") or {}).get("nominatedNodeName"))
        lacking = minimum - ready - pipelined - len(reserved)
        if lacking > 0:
            keys = {_ref(p) for p, _ in reserved}
            others = sorted(
                (
                    p
                    for p in pending
                    if _ref(p) not in keys and not meta(p).get("deletionTimestamp")
                ),
                key=lambda p: (pod_requests(p).get("cpu", 0), pod_requests(p).get("memory", 0)),
            )
            for pod in others[:lacking]:
                add(need, pod_requests(pod))
        since = min(t for _, t in reserved)
        queue = pod_queue(members[0], queue_of)
        claims.append((since, -priority, creation, job, queue, need, [p for p, _ in reserved]))
    held: set[str] = set()
    taken: dict[str, dict[str, float]] = defaultdict(dict)
    for *_, queue, need, pods in sorted(claims, key=lambda c: c[:4]):
        if (
            queue not in queues
            or ((queues[queue].get("status") or {}).get("state") or "Open") != "Open"
        ):
            continue
        levels = chain(queue)
        dims = [r for r, v in need.items() if v > 0 and r != "pods"]
        if any(
            allocated[level].get(r, 0.0) + taken[level].get(r, 0.0) + need[r]
            > capability.get(level, {}).get(r, float("inf")) + EPSILON
            for level in levels
            for r in dims
        ):
            continue
        for level in levels:
            add(taken[level], need)
        held.update(_ref(p) for p in pods)
    return held, stamped


def _ready(node: dict) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "Ready"]
    if ready and ready[-1].get("status") != "True":
        return False
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    taints = (node.get("spec") or {}).get("taints") or []
    return not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints)


@dataclass
class Tracker:
    """What the invariants remember between cycles, for one run."""

    gates_on: bool = True
    # Cycles a wrong condition may last: 1 without faults; with them, a write the API refused
    # is retried by the next cycle, which may be refused too.
    grace: int = 1
    autoscaler: str = "none"
    deleted: set[str] = field(default_factory=set)  # pod keys the workload or a fault deleted
    # Pods whose status write an injected fault refused this cycle (set by the runner).
    refused: set[str] = field(default_factory=set)
    # Pods whose bind an injected fault refused, in any cycle so far (added by the runner).
    bind_refused: set[str] = field(default_factory=set)
    node_of: dict[str, str] = field(default_factory=dict)  # uid -> the node it was bound to
    queue_used: dict[str, dict[str, float]] = field(default_factory=dict)
    streaks: dict[tuple[int, str], int] = field(default_factory=lambda: defaultdict(int))
    full_gangs: set[str] = field(default_factory=set)
    reported: set[tuple] = field(default_factory=set)
    # At the cycle's session open (``open_cycle``): the pods whose recorded reservation the
    # scheduler holds, and every pod with one (None: not computed, every one counts).
    # queue -> when the workload last changed its capability or state (set by the runner)
    queue_changed: dict[str, float] = field(default_factory=dict)
    held: set[str] | None = None
    stamped: set[str] = field(default_factory=set)
    # queue -> what is allocated and what every pod let through its gate holds (``queues``)
    queue_admitted: dict[str, dict[str, float]] = field(default_factory=dict)

    def open_cycle(self, store: Store, now: float) -> None:
        """Before a cycle, on the objects its session opens on (the runner calls it once the
        simulation has stepped and the churn is done)."""
        self.held, self.stamped = held_reservations(store, now)

    def streak(self, invariant: int, key: str, holds: bool) -> int:
        if not holds:
            self.streaks.pop((invariant, key), None)
            return 0
        self.streaks[(invariant, key)] += 1
        return self.streaks[(invariant, key)]

    def check(self, store: Store, report: CycleReport, ledger_summary: dict | None = None):
        """Every invariant after one cycle; the violations not reported before."""
        pods = [
            p for p in store.list("pods")[0] if not meta(p).get("deletionTimestamp") or _bound(p)
        ]
        found: list[Violation] = []
        found += self.bindings(store, pods)
        found += self.queues(store, pods)
        found += self.unschedulable(store, report)
        found += self.liveness(store, pods)
        found += self.pipelines(store, report, pods)
        found += self.gangs(store, report, pods)
        found += self.accounting(store, report, pods)
        if ledger_summary is not None and self.gates_on and self.autoscaler != "none":
            false_ups = ledger_summary.get("false_scale_ups", 0)
            if false_ups:
                found.append(
                    Violation(8, f"{self.autoscaler} made {false_ups} false scale-up(s)", ())
                )
        fresh = [v for v in found if v.key not in self.reported]
        self.reported.update(v.key for v in fresh)
        return fresh

    # -- 1 ----------------------------------------------------------------------------------

    def bindings(self, store: Store, pods: list[dict]) -> list[Violation]:
        found = []
        nodes = {meta(n)["name"]: n for n in store.list("nodes")[0]}
        used: dict[str, dict[str, float]] = defaultdict(dict)
        on_node: dict[str, list[str]] = defaultdict(list)
        for pod in pods:
            node = _bound(pod)
            if not node:
                continue
            uid = meta(pod).get("uid", "")
            before = self.node_of.setdefault(uid, node)
            if before != node:
                found.append(
                    Violation(
                        1, f"{_ref(pod)} was bound to {before}, now to {node}",
                        (_ref(pod), f"node/{before}", f"node/{node}"),
                    )
                )  # fmt: skip
            if is_finished(pod) or node not in nodes:
                continue
            add(used[node], pod_requests(pod))
            on_node[node].append(_ref(pod))
        for name, total in used.items():
            allocatable = node_allocatable(nodes[name])
            over = {r: v for r, v in total.items() if v > allocatable.get(r, 0) + EPSILON}
            if over:
                detail = ", ".join(
                    f"{r} {v:g} > {allocatable.get(r, 0):g}" for r, v in over.items()
                )
                found.append(
                    Violation(1, f"node {name} is over its allocatable: {detail}",
                              (f"node/{name}", *sorted(on_node[name])))
                )  # fmt: skip
        return found

    # -- 2 ----------------------------------------------------------------------------------

    def queues(self, store: Store, pods: list[dict]) -> list[Violation]:
        queues = {meta(q)["name"]: q for q in store.list("queues")[0]}
        groups = podgroup_queues(store)
        parent = {name: (q.get("spec") or {}).get("parent") or "root" for name, q in queues.items()}
        used: dict[str, dict[str, float]] = defaultdict(dict)
        members: dict[str, list[str]] = defaultdict(list)
        admitted: dict[str, dict[str, float]] = defaultdict(dict)
        for pod in pods:
            # A reservation recorded before the cycle counts if the scheduler held it at
            # session open; one recorded during the cycle (a gate removed) always counts.
            key = _ref(pod)
            reserved = (
                not _bound(pod)
                and (not _gated(pod) or reservation_since(pod) is not None)
                and QUEUE_RESERVATION_ANNOTATION in (meta(pod).get("annotations") or {})
                and (self.held is None or key in self.held or key not in self.stamped)
            )
            # A terminating pod's resources are being released: Volcano's queue figures count
            # only allocated tasks (api.AllocatedStatus), not Releasing ones.
            allocated = (
                _bound(pod) and not is_finished(pod) and not meta(pod).get("deletionTimestamp")
            )
            if not (allocated or reserved or (not _bound(pod) and not _gated(pod))):
                continue
            # For invariant 4: a pod let through its gate (ungated, stamped) is an admitted
            # job whether or not its reservation is still held — its request counts in its
            # queue's inqueue figure, as Volcano's capacity plugin counts an Inqueue job's
            # minResources, and holds the queue against gated pods.
            let_through = (
                not _bound(pod)
                and not _gated(pod)
                and QUEUE_RESERVATION_ANNOTATION in (meta(pod).get("annotations") or {})
            )
            queue, seen = pod_queue(pod, groups), set()
            while queue in queues and queue not in seen:  # the queue and each ancestor
                seen.add(queue)
                if allocated or reserved:
                    add(used[queue], pod_requests(pod))
                    members[queue].append(_ref(pod))
                if allocated or let_through:
                    add(admitted[queue], pod_requests(pod))
                queue = parent[queue]
        found = []
        for name, queue in queues.items():
            raw = (queue.get("spec") or {}).get("capability") or {}
            try:
                capability = parse_resource_list(raw, obj=f"queue {name}", field="capability")
            except ValueError:
                continue
            now, before = used.get(name, {}), self.queue_used.get(name, {})
            for resource, limit in capability.items():
                if limit <= 0:  # Volcano's capacity plugin reads <= 0 as no limit
                    continue
                value = now.get(resource, 0.0)
                if value > limit + EPSILON and value > before.get(resource, 0.0) + EPSILON:
                    found.append(
                        Violation(
                            2,
                            f"queue {name}: allocated + reserved {resource} {value:g} > "
                            f"capability {limit:g} (was {before.get(resource, 0.0):g})",
                            (f"queue/{name}", *sorted(members[name])),
                        )
                    )
        self.queue_used = {k: dict(v) for k, v in used.items()}
        self.queue_admitted = {k: dict(v) for k, v in admitted.items()}
        return found

    # -- 3 ----------------------------------------------------------------------------------

    def unschedulable(self, store: Store, report: CycleReport) -> list[Violation]:
        found = []
        conditions = store_conditions(store)
        skipped = set()
        for pod in report.waiting:  # tests.invariants.check_cycle, pod by pod
            key = f"{pod.namespace}/{pod.name}"
            queue_wait = pod.state is not PodState.UNSCHEDULABLE and (
                pod.state is not PodState.PIPELINED
                and (pod.state is PodState.GATED or pod.status.code in NOT_FOR_NODES)
            )
            condition = conditions(pod.namespace, pod.name) or {}
            wrong = queue_wait and condition.get("reason") == "Unschedulable"
            skipped.add(key)
            n = self.streak(30, key, wrong)
            if n >= self.grace:
                found.append(
                    Violation(
                        3,
                        f"pod {key} waits for {pod.status.code.value} ({pod.status.message}) "
                        f"but carries PodScheduled=False reason Unschedulable for {n} cycle(s): "
                        f"an autoscaler would buy a node for it",
                        (f"pod/{key}",),
                    )
                )
        for invariant, key in list(self.streaks):
            if invariant == 30 and key not in skipped:
                self.streaks.pop((invariant, key))
        waiting = {f"{p.namespace}/{p.name}": p for p in report.waiting}
        present = {f"{meta(p)['namespace']}/{meta(p)['name']}" for p in store.list("pods")[0]}
        for key, pod in waiting.items():
            short = pod.state is PodState.UNSCHEDULABLE and key in present
            n = self.streak(3, key, short)
            condition = conditions(pod.namespace, pod.name) or {}
            if (
                n >= UNSCHEDULABLE_WITHIN + self.grace - 1
                and condition.get("reason") != "Unschedulable"
            ):
                found.append(
                    Violation(
                        3,
                        f"pod {key} fits no node for {n} cycles but its PodScheduled condition "
                        f"says {condition.get('reason') or 'nothing'}",
                        (f"pod/{key}",),
                    )
                )
        for invariant, key in list(self.streaks):
            if invariant == 3 and key not in waiting:
                self.streaks.pop((invariant, key))
        return found

    # -- 4 ----------------------------------------------------------------------------------

    def liveness(self, store: Store, pods: list[dict]) -> list[Violation]:
        queues = {meta(q)["name"]: q for q in store.list("queues")[0]}
        groups = podgroup_queues(store)
        parent = {name: (q.get("spec") or {}).get("parent") or "root" for name, q in queues.items()}
        used = self.queue_admitted  # computed by ``queues`` this cycle
        free: list[dict[str, float]] = []
        nodes = [n for n in store.list("nodes")[0] if _ready(n)]
        bound: dict[str, dict[str, float]] = defaultdict(dict)
        for pod in pods:
            if _bound(pod) and not is_finished(pod):
                add(bound[_bound(pod)], pod_requests(pod))
        for node in nodes:
            room = dict(node_allocatable(node))
            add(room, bound.get(meta(node)["name"], {}), -1)
            free.append(room)
        found, live = [], set()
        for pod in pods:
            key = _ref(pod)
            spec = pod.get("spec") or {}
            candidate = (
                _gated(pod)
                and not (meta(pod).get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
                and not spec.get("nodeSelector")
                and not spec.get("affinity")
                and not spec.get("tolerations")
            )
            if not candidate:
                continue
            request = pod_requests(pod)
            queue, seen, room = pod_queue(pod, groups), set(), True
            if queue not in queues:
                continue
            while queue in queues and queue not in seen:
                seen.add(queue)
                q = queues[queue]
                if ((q.get("status") or {}).get("state") or "Open") != "Open":
                    room = False
                raw = (q.get("spec") or {}).get("capability") or {}
                try:
                    capability = parse_resource_list(raw, obj=queue, field="capability")
                except ValueError:
                    room = False
                    break
                for resource, limit in capability.items():
                    if (
                        limit > 0
                        and used.get(queue, {}).get(resource, 0.0) + request.get(resource, 0.0)
                        > limit + EPSILON
                    ):
                        room = False
                queue = parent[queue]
            holds = room and any(fits(request, f) for f in free)
            live.add(key)
            n = self.streak(4, key, holds)
            if n >= UNGATED_WITHIN:
                found.append(
                    Violation(
                        4,
                        f"{key} kept its gate {n} cycles while its queue "
                        f"{pod_queue(pod, groups)} had room and a node could take it",
                        (key, f"queue/{pod_queue(pod, groups)}"),
                    )
                )
        for invariant, key in list(self.streaks):
            if invariant == 4 and key not in live:
                self.streaks.pop((invariant, key))
        return found

    # -- 5 ----------------------------------------------------------------------------------

    def pipelines(self, store: Store, report: CycleReport, pods: list[dict]) -> list[Violation]:
        found = []
        pipelined = {
            f"pod/{p.namespace}/{p.name}" for p in report.waiting if p.state is PodState.PIPELINED
        }
        for key in pipelined:
            n = self.streak(5, "pipe:" + key, True)
            if n >= PIPELINE_WITHIN:
                found.append(Violation(5, f"{key} pipelined for {n} cycles", (key,)))
        for invariant, key in list(self.streaks):
            if invariant == 5 and key.startswith("pipe:") and key[5:] not in pipelined:
                self.streaks.pop((invariant, key))
        nominated = set()
        for pod in pods:
            node = (pod.get("status") or {}).get("nominatedNodeName")
            key = _ref(pod)
            if not node or _bound(pod) or is_finished(pod):
                continue
            stale = key not in pipelined
            nominated.add(key)
            if stale and key in self.refused:
                continue  # the write clearing it was refused: the streak waits for the retry
            n = self.streak(5, "nom:" + key, stale)
            if n >= NOMINATION_WITHIN:
                found.append(
                    Violation(
                        5,
                        f"{key} keeps nominatedNodeName {node} for {n} cycles without a "
                        f"pipelined decision",
                        (key, f"node/{node}"),
                    )
                )
        for invariant, key in list(self.streaks):
            if invariant == 5 and key.startswith("nom:") and key[4:] not in nominated:
                self.streaks.pop((invariant, key))
        return found

    # -- 6 ----------------------------------------------------------------------------------

    def gangs(self, store: Store, report: CycleReport, pods: list[dict]) -> list[Violation]:
        found = []
        pipelined = {p.uid for p in report.waiting if p.state is PodState.PIPELINED}
        members: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for pod in pods:
            group = (meta(pod).get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if group:
                members[(meta(pod)["namespace"], group)].append(pod)
        for group in store.list("podgroups")[0]:
            namespace, name = meta(group)["namespace"], meta(group)["name"]
            key = f"podgroup/{namespace}/{name}"
            minimum = int((group.get("spec") or {}).get("minMember") or 1)
            bound = [p for p in members[(namespace, name)] if _bound(p)]
            waiting = [p for p in members[(namespace, name)] if meta(p).get("uid") in pipelined]
            if len(bound) + len(waiting) >= minimum:
                self.full_gangs.add(key)  # placed whole: a member lost later is a node's loss
                continue
            lost = any(d.startswith(f"pod/{namespace}/{name}-") for d in self.deleted)
            # Bindings are one API call per pod, and Volcano takes none back: a gang whose
            # other members were bound while the API refused one member's bind (Volcano's
            # SchedulerCache.Bind resyncs that task alone) is partial until the next cycles
            # bind it — or longer, if its node is gone meanwhile. Such a member excuses it
            # while it waits.
            refused = any(
                _ref(p) in self.bind_refused and not _bound(p) for p in members[(namespace, name)]
            )
            partial = bool(bound) and key not in self.full_gangs and not lost and not refused
            if self.streak(6, key, partial) >= self.grace:
                found.append(
                    Violation(
                        6,
                        f"{key} has {len(bound)} bound pod(s) of minMember {minimum}",
                        (key, *sorted(_ref(p) for p in bound)),
                    )
                )
        return found

    # -- 7 ----------------------------------------------------------------------------------

    def accounting(self, store: Store, report: CycleReport, pods: list[dict]) -> list[Violation]:
        if report.failure:
            return [Violation(7, f"the cycle raised: {report.failure}", ())]
        found = []
        seen = {p.uid for p in report.waiting} | {p.uid for p in report.pods or []}
        conditions = store_conditions(store)
        for pod in pods:
            key = _ref(pod)
            if meta(pod).get("uid") not in seen and not is_finished(pod):
                found.append(Violation(7, f"{key} is in the cluster but not in the report", (key,)))
            pending = not _bound(pod) and not _gated(pod) and not is_finished(pod)
            no_reason = pending and not conditions(meta(pod)["namespace"], meta(pod)["name"])
            if no_reason and key in self.refused:
                continue  # its status write was refused: the streak waits for the retry
            n = self.streak(7, key, no_reason)
            if n >= REASON_WITHIN:
                found.append(
                    Violation(7, f"{key} pending {n} cycles without a PodScheduled reason", (key,))
                )
        return found
