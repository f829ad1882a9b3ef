"""Part 10, preempt and reclaim when real life happens: gate reservations, disruption budgets
that let some evictions through and not others, gangs, a second scheduler left running.

Played through the simulated cluster's API with a real scheduler on virtual time (the e2e
Harness checks after every cycle that no pod waiting for its queue is marked Unschedulable);
the simulated cluster enforces PodDisruptionBudgets on the eviction subresource as
kube-apiserver does. The promises (README "Pipelined pods, preempt and reclaim" and its "When
real life happens", "Gate-controlled scheduling"; issue 15 items 1, 4, 11): an ungated pod's
queue room is reserved "so no later pod takes it"; "a gang's evictions are committed only if
the whole gang is then pipelined"; a refused eviction never wedges the scheduler and its
victim "is not picked again for 30 s or until its pod changes"; pipeline persistence ends the
cyclic evictions of Volcano issue #4947.
"""

from __future__ import annotations

from kubernetes import client

from scheduler.api.labels import QUEUE_ALLOCATION_GATE
from scheduler.api.report import TransitionKind
from tests.adversary.helpers import without_pdb
from tests.builders import body, node, pod, podgroup
from tests.e2e.harness import Harness, condition, gates
from tests.e2e.pipeline.test_cyclic_eviction import SCENARIO as CYCLIC
from tests.e2e.pipeline.test_real_life import fill_alpha, harness, nominated

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
NS = "default"
NEW_NODE = body(node("n2", "8", "32Gi", labels={"pool": "new", "kubernetes.io/hostname": "n2"}))


def evicted(h: Harness) -> list[str]:
    return [t.name for r in h.reports for t in r.transitions if t.kind is TransitionKind.EVICTED]


def refused(h: Harness) -> list[str]:
    return [e for r in h.reports for e in r.errors if e.startswith("evict ")]


def budget(h: Harness, name: str, min_available: int, app: str) -> None:
    client.PolicyV1Api(h.api).create_namespaced_pod_disruption_budget(
        NS,
        {"metadata": {"name": name},
         "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}},
    )  # fmt: skip


# --- reclaim and gate reservations --------------------------------------------------------------

RESERVED = {
    "namespaces": [{"name": NS}],
    "queues": [
        {"name": "other", "spec": {"reclaimable": True}},
        {"name": "q", "spec": {"reclaimable": False,
                               "capability": {"cpu": "1", "memory": "8Gi"},
                               "deserved": {"cpu": "1", "memory": "8Gi"}}},
    ],
    "nodes": [{"name": "n1", "capacity": {"cpu": "2", "memory": "16Gi", "pods": "110"}}],
    "kubelet": {"startupDelay": 1},
}  # fmt: skip


def test_reclaim_does_not_evict_for_a_pod_whose_queue_room_is_reserved():
    """README: an ungated pod that finds no node "keeps its share of the queue reserved so no
    later pod takes it". Queue q holds 1 CPU. pod-2 (opted in, needs a node of pool "new")
    passed its check, lost its gate and holds q's 1 CPU while it waits for its node. pod-3
    (1 CPU, q, not opted in — its namespace did not opt in) arrives: allocate rightly refuses
    it ("reserved 1 CPU"). Nothing may then be evicted for it: q has no room for it, whatever
    the nodes free.

    What happens: reclaim evicts ``other``'s pod o-1 for pod-3 and pipelines pod-3 on n1:
    ``CapacityPlugin.preemptive`` counts the queue's allocation but not its gate reservations,
    and reclaim's node check never asks ``allocatable``. Every later cycle allocate unpipelines
    pod-3 (its queue refuses it) and reclaim pipelines it again on the room it freed, so pod-3
    stays nominated on n1, a running pod of another team was killed for nothing, and the room
    pod-2 was let through for was up for grabs (the design's race, through reclaim)."""
    h = Harness(RESERVED)
    try:
        for i in range(2):
            obj = pod(f"o-{i}", "1", "1Gi", namespace=NS, queue="other", grace=1)
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(3)
        group = podgroup("pg-2", namespace=NS, queue="q")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        obj = pod("pod-2", "1", "1Gi", namespace=NS, group="pg-2", opt_in=True,
                  gates=[QUEUE_ALLOCATION_GATE], spec={"nodeSelector": {"pool": "new"}})  # fmt: skip
        h.core.create_namespaced_pod(NS, body(obj))
        h.step(2)
        assert gates(h.pod("pod-2", NS)) == []  # let through, reserved, waiting for its node
        group = podgroup("pg-3", namespace=NS, queue="q")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        h.core.create_namespaced_pod(NS, body(pod("pod-3", "1", "1Gi", namespace=NS, group="pg-3")))
        h.step(4)
        assert evicted(h) == []
        assert nominated(h, "pod-3") == ""
        h.store.create("nodes", NEW_NODE)
        h.step(3)
        assert h.pod("pod-2", NS)["spec"].get("nodeName") == "n2"
    finally:
        h.close()


# --- disruption budgets that let some evictions through ----------------------------------------


class Deployment:
    """A Deployment's controller: every pod that is deleted (evicted) is replaced at once by a
    new one of the same shape and labels, as a ReplicaSet does."""

    def __init__(self, h: Harness, prefix: str, replicas: int) -> None:
        self.h, self.prefix, self.created, self.live = h, prefix, 0, set()
        for _ in range(replicas):
            self._create()

    def _create(self) -> None:
        name = f"{self.prefix}-{self.created}"
        self.created += 1
        obj = pod(name, "1", namespace=NS, queue="alpha", grace=5, labels={"app": self.prefix})
        self.h.core.create_namespaced_pod(NS, body(obj))
        self.live.add(name)

    def reconcile(self) -> None:
        pods = self.h.store.list("pods", NS)[0]
        present = {
            p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")
        }
        gone = self.live - present
        self.live -= gone
        for _ in gone:
            self._create()


def test_a_budget_that_allows_one_of_the_two_evictions_needed_does_not_evict_forever():
    """Issue 15 item 11 and README: pipeline persistence ends the cyclic evictions of Volcano
    issue #4947 (README table: 2 evictions, then none). Queue alpha runs a 4-replica
    Deployment on n1 (4 CPU) under a PodDisruptionBudget minAvailable 3: one eviction at a
    time is allowed. r (2 CPU, queue beta) reclaims: it needs two victims at once, which the
    budget never allows (3 running + r's 2 CPU do not fit 4). The scheduler must not kill
    pods for a reclaim that cannot complete.

    What happened (found by the adversary): every 30 s the refused victim's retry time
    passed, reclaim picked two fresh victims, the first eviction went through (the budget had
    recovered: the replacement pod was running), the second was refused and the pipeline
    undone — over 90 s three pods evicted for nothing, for ever. The pdb plugin (on in
    Sluice's default configuration, as Volcano's pkg/scheduler/plugins/pdb) keeps the victims
    within ``status.disruptionsAllowed``: reclaim sees that n1 cannot be freed and evicts
    nothing."""
    h = Harness(CYCLIC)
    try:
        alpha = Deployment(h, "alpha", 4)
        h.step(3)
        budget(h, "alpha", 3, "alpha")
        h.step(1)
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta", grace=5)))
        h.step(90, controller=alpha.reconcile)
        assert (evicted(h), refused(h)) == ([], [])
        assert h.pod("r", NS)["spec"].get("nodeName") is None
        assert sorted(alpha.live) == [f"alpha-{i}" for i in range(4)]  # none replaced
    finally:
        h.close()


GANG = {
    "namespaces": [{"name": NS}],
    "queues": [
        {"name": "alpha", "spec": {"priority": 10, "reclaimable": True,
                                   "deserved": {"cpu": "2", "memory": "8Gi"}}},
        {"name": "beta", "spec": {"reclaimable": False,
                                  "deserved": {"cpu": "4", "memory": "8Gi"}}},
    ],
    "nodes": [{"name": "n1", "capacity": {"cpu": "2", "memory": "16Gi", "pods": "110"}},
              {"name": "n2", "capacity": {"cpu": "2", "memory": "16Gi", "pods": "110"}}],
    "kubelet": {"startupDelay": 1},
}  # fmt: skip


def test_once_a_gangs_eviction_is_refused_its_other_victims_are_left_alone():
    """README: "a gang's evictions are committed only if the whole gang is then pipelined"
    (and "Differences from Volcano": evictions for a gang that still cannot start free nothing
    it can use). Queue alpha runs four 1-CPU pods, two on each node; alpha-1 (on n1) is
    protected by a PodDisruptionBudget. The gang ``pair`` (2 × 2 CPU, queue beta) reclaims:
    member 0 on n1 (victims alpha-0 and alpha-1), member 1 on n2 (alpha-2 and alpha-3). The
    eviction of alpha-1 is refused, so member 0 cannot be pipelined and neither can the gang:
    from then on, evicting alpha-2 and alpha-3 frees room for nothing, and they must be left
    running.

    What happens: ``Statement.commit`` goes on through the operations after the refusal — it
    only undoes the pipeline on the refusing node — and evicts alpha-2 and alpha-3 too; the
    gang is then released as a whole next cycle, with three pods killed and nothing to show.

    Played without the pdb plugin (Volcano's default configuration), so the API refuses."""
    h = Harness(GANG, config=without_pdb())
    try:
        for i in range(4):
            app = "kept" if i == 1 else "free"
            obj = pod(f"alpha-{i}", "1", namespace=NS, queue="alpha", grace=30,
                      node_name="n1" if i < 2 else "n2", labels={"app": app})  # fmt: skip
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(2)
        budget(h, "kept", 1, "kept")
        group = podgroup("pair", 2, namespace=NS, queue="beta")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        for i in range(2):
            h.core.create_namespaced_pod(
                NS, body(pod(f"pair-{i}", "2", namespace=NS, group="pair"))
            )
        h.step(2)
        assert any("alpha-1" in e for e in refused(h)), refused(h)
        leaving = [
            n for n in ("alpha-2", "alpha-3")
            if h.pod(n, NS)["metadata"].get("deletionTimestamp")
        ]  # fmt: skip
        assert leaving == [], evicted(h)
    finally:
        h.close()


def test_a_pod_whose_preemption_in_its_full_queue_was_refused_is_not_unschedulable():
    """The invariant of issue 15 item 4 (README: "A pod that waits only for its queue — gated
    or not — is never marked Unschedulable"). Queue q (4 CPU) is full with four low-priority
    pods on n1, which has 8 CPU: the nodes have room, the queue has none. ``urgent`` (2 CPU,
    high priority, not opted in) preempts within q; a PodDisruptionBudget refuses every
    eviction. urgent waits for its queue — a node would not help — so its PodScheduled
    reason must never be ``Unschedulable``.

    What happens: ``Statement.commit`` marks a pipeline undone by a refused eviction with a
    hard-coded ``Code.UNSCHEDULABLE`` ("not pipelined on n1: the eviction of ... there was
    refused"), whatever made the evictions necessary: urgent carries
    ``PodScheduled=False reason Unschedulable`` for two cycles, and Cluster Autoscaler
    scales up for a pod only its queue holds back. The harness's check does not see it: it
    trusts that status code.

    Played without the pdb plugin (Volcano's default configuration), so the API refuses."""
    scenario = {
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": "4", "memory": "32Gi"},
                                          "reclaimable": False}}],
        "nodes": [{"name": "n1", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
        "kubelet": {"startupDelay": 1},
    }  # fmt: skip
    h = Harness(scenario, config=without_pdb())
    try:
        client.SchedulingV1Api(h.api).create_priority_class(
            {"metadata": {"name": "high"}, "value": 1000}
        )
        for i in range(4):
            obj = pod(f"low-{i}", "1", namespace=NS, queue="q", grace=10, labels={"app": "low"})
            h.core.create_namespaced_pod(NS, body(obj))
        h.step(3)
        budget(h, "low", 4, "low")
        group = podgroup("pg-urgent", namespace=NS, queue="q", priority_class="high")
        h.custom.create_namespaced_custom_object(*VOLCANO, NS, "podgroups", body(group))
        obj = pod("urgent", "2", namespace=NS, group="pg-urgent", priority_class="high")
        h.core.create_namespaced_pod(NS, body(obj))
        reasons = []
        for _ in range(4):
            h.step(1)
            reasons.append(condition(h.pod("urgent", NS)).get("reason"))
        assert refused(h), "the budget refused nothing: the scenario did not happen"
        assert "Unschedulable" not in reasons, reasons
    finally:
        h.close()


# --- a second scheduler left running --------------------------------------------------------------


def test_the_scheduler_left_idle_by_a_failover_writes_nothing():
    """Regression (passes today). Issue 15 item 1's failover: a second scheduler takes the
    cycles while the first stays up, informers running. The idle one must write nothing to
    the cluster — no nomination, eviction, gate removal, condition or event — while the
    active one pipelines, evicts and binds (README: "a second one taking the cycles")."""
    h = harness()
    try:
        fill_alpha(h, grace=5)
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta", grace=5)))
        h.step(1)
        assert nominated(h, "r") == "n1"
        h.failover()
        idle = h.standby[0]
        calls: list[str] = []
        request = idle.cluster._request

        def recorded(what, *args, **kwargs):
            calls.append(what)
            return request(what, *args, **kwargs)

        idle.cluster._request = recorded
        h.step(15)
        assert h.pod("r", NS)["spec"].get("nodeName") == "n1"
        assert calls == []
    finally:
        h.close()


def test_a_victim_replaced_by_a_new_pod_of_the_same_name_leaves_the_new_pod_alone():
    """README ("A refused eviction ... A victim already gone (404) is what the eviction
    wanted") and the care Sluice takes elsewhere with pods replaced under the same name (gate
    removals: "a pod that is gone ... or replaced by a new pod of the same name (another UID)
    is left alone"; binds carry the pod's uid). A StatefulSet's pod chosen as a victim is
    deleted and recreated under the same name (new uid) just before the eviction is sent: the
    pod that was chosen is gone, which is what the eviction wanted; its replacement was never
    chosen and must not be evicted. kube-apiserver lets the eviction say which pod it means
    (``deleteOptions.preconditions.uid``: 409 if the uid differs); the simulated cluster
    honours it.

    What happens: ``KubeClusterClient.evict`` names the pod only, so the API evicts whatever
    pod has that name now: the fresh replacements (Pending, so deleted at once) are gone too,
    and their controller has to create them a second time."""
    h = harness()
    try:
        fill_alpha(h, grace=5)
        h.core.create_namespaced_pod(NS, body(pod("r", "2", namespace=NS, queue="beta")))
        h.settle()
        real_evict = h.service.cluster.evict
        replaced: dict[str, str] = {}

        def evict_after_the_controller_replaced_it(obj, reason):
            name = obj["metadata"]["name"]
            h.core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
            fresh = pod(name, "1", namespace=NS, queue="alpha", grace=5, uid=None, created=None)
            replaced[name] = h.core.create_namespaced_pod(NS, body(fresh)).metadata.uid
            return real_evict(obj, reason)

        h.service.cluster.evict = evict_after_the_controller_replaced_it
        h.step(1)
        h.service.cluster.evict = real_evict
        assert replaced, "nothing was evicted: the scenario did not happen"
        alive = {
            p["metadata"]["uid"]
            for p in h.store.list("pods", NS)[0]
            if not p["metadata"].get("deletionTimestamp")
        }
        evicted_replacements = [name for name, uid in replaced.items() if uid not in alive]
        assert evicted_replacements == []
    finally:
        h.close()
