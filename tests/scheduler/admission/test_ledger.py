"""The ledger of workloads admitted since the capacity snapshot was taken: what it counts,
where, until when; and the check's plugin using it over whole cycles."""

from __future__ import annotations

from datetime import timedelta

from scheduler.admission.check import AdmissionChecker
from scheduler.admission.context import AdmissionContext
from scheduler.admission.evaluator import evaluate_workload
from scheduler.admission.ledger import AdmittedLedger, AdmittedNow, LivePod
from scheduler.admission.monitor import build_snapshot
from scheduler.api.quantity import GPU
from scheduler.config import default_config
from scheduler.loop import run_cycle
from tests.builders import node, pod, podgroup, queue
from tests.fakes import RecordingClusterClient
from tests.scheduler.admission.helpers import T0, snapshot_of
from tests.scheduler.uthelper import Scenario

GI = 2**30
LATER = T0 + timedelta(seconds=5)


def gpod(name, cpu="3", *, group=None, **kwargs):
    """A Guaranteed pod ml/<name> of ``cpu`` CPUs and 1Gi."""
    return pod(name, cpu, "1Gi", namespace="ml", guaranteed=True, group=group, **kwargs)


def free_cpu(snapshot):
    return {n.node_name: n.remaining["cpu"] for n in snapshot.nodes}


def live(*pods, waiting=True, finished=()):
    """An admitted workload as the session sees it: ``pods`` are (uid, node) or pod dicts
    (bound where their ``spec.nodeName`` says); ``waiting``: still Inqueue."""
    out = []
    for p in pods:
        if isinstance(p, tuple):
            out.append(LivePod(p[0], "", p[1]))
        else:
            meta = p["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            out.append(LivePod(meta["uid"], key, p["spec"].get("nodeName") or "", p))
    return AdmittedNow(out, waiting, set(finished))


# -- the ledger alone --------------------------------------------------------------------


def test_an_admitted_workload_is_taken_from_the_node_it_was_placed_on():
    snapshot = snapshot_of([node("n0", "4"), node("n1", "4")])
    ledger = AdmittedLedger()
    first = gpod("first")
    ledger.record("pg-first", [first], {"ml/first": "n1"}, T0)
    available = ledger.available(snapshot)
    assert free_cpu(available) == {"n0": 4000, "n1": 1000}
    assert available.nodes[1].remaining["pods"] == 109 and available.last_check == T0
    assert free_cpu(snapshot) == {"n0": 4000, "n1": 4000}  # the snapshot itself is untouched
    assert ledger.available(snapshot) is available  # worked out once per revision


def test_two_3_cpu_workloads_do_not_both_fit_into_4_free_cpus():
    snapshot = snapshot_of([node("n0", "4")])
    ledger = AdmittedLedger()
    first = evaluate_workload([gpod("first")], ledger.available(snapshot))
    assert first.fits
    ledger.record("pg-first", [gpod("first")], first.placement, T0)
    second = evaluate_workload([gpod("second")], ledger.available(snapshot))
    assert not second.fits
    assert "no suitable node has 3 CPU free for pod ml/second" in second.explanation
    assert "largest free 1 CPU" in second.explanation


def test_a_workload_never_competes_with_itself():
    snapshot = snapshot_of([node("n0", "4")])
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], {"ml/first": "n0"}, T0)
    assert free_cpu(ledger.available(snapshot)) == {"n0": 1000}
    assert free_cpu(ledger.available(snapshot, without=["uid-ml-first"])) == {"n0": 4000}
    assert ledger.available(snapshot, without=["uid-ml-other"]) is ledger.available(snapshot)


def test_a_pod_leaves_the_ledger_once_a_snapshot_lists_it_and_is_not_counted_twice():
    nodes = [node("n0", "6")]
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], {"ml/first": "n0"}, T0)
    bound = gpod("first", node_name="n0")
    newer = build_snapshot(nodes, [bound], LATER)  # taken after first's pod was bound
    assert free_cpu(newer) == {"n0": 3000}
    ledger.reconcile(newer, {"pg-first": live(("uid-ml-first", "n0"))})
    assert "pg-first" not in ledger
    assert free_cpu(ledger.available(newer)) == {"n0": 3000}  # not 0: counted once


def test_a_pod_the_snapshot_does_not_list_yet_stays_on_the_node_it_is_bound_to():
    snapshot = snapshot_of([node("n0", "4"), node("n1", "4")])
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], {"ml/first": "n0"}, T0)
    ledger.reconcile(snapshot, {"pg-first": live(("uid-ml-first", "n1"))})  # the scheduler chose n1
    assert free_cpu(ledger.available(snapshot)) == {"n0": 4000, "n1": 1000}


def test_a_gang_leaves_pod_by_pod_as_the_snapshot_shows_them():
    nodes = [node("n0", "4"), node("n1", "4")]
    ledger = AdmittedLedger()
    pods = [gpod(f"g-{i}", group="g") for i in range(2)]
    ledger.record("pg-g", pods, {"ml/g-0": "n0", "ml/g-1": "n1"}, T0)
    newer = build_snapshot(nodes, [gpod("g-0", group="g", node_name="n0")], LATER)
    ledger.reconcile(newer, {"pg-g": live(("uid-ml-g-0", "n0"), ("uid-ml-g-1", "n1"))})
    assert free_cpu(ledger.available(newer)) == {"n0": 1000, "n1": 1000}  # g-0 once, g-1 here
    assert set(ledger.workloads["pg-g"].pods) == {"uid-ml-g-1"}


def test_gone_unadmitted_or_finished_workloads_and_pods_leave_the_ledger():
    snapshot = snapshot_of([node("n0", "16")])
    ledger = AdmittedLedger()
    for name in ("gone", "pending", "finished", "kept"):
        ledger.record(f"pg-{name}", [gpod(name)], {f"ml/{name}": "n0"}, T0)
    assert free_cpu(ledger.available(snapshot)) == {"n0": 4000}
    # The caller maps the admitted workloads still there to their live pods: "gone" was
    # deleted, "pending" is back to Pending, "finished"'s pod succeeded (not live).
    finished = live(finished=["uid-ml-finished"])
    ledger.reconcile(snapshot, {"pg-finished": finished, "pg-kept": live(("uid-ml-kept", ""))})
    assert set(ledger.workloads) == {"pg-kept"}
    assert free_cpu(ledger.available(snapshot)) == {"n0": 13000}


def test_only_what_the_snapshot_would_count_is_recorded():
    snapshot = snapshot_of([node("n0", "8", gpu="2")])
    ledger = AdmittedLedger()
    burstable_gpu = pod("b", "1", "1Gi", gpu="1", limits={GPU: "1"}, namespace="ml")
    burstable_plain = pod("p", "1", "1Gi", namespace="ml")
    ledger.record("pg-b", [burstable_gpu], {"ml/b": "n0"}, T0)
    ledger.record("pg-p", [burstable_plain], {"ml/p": "n0"}, T0)
    assert "pg-p" not in ledger  # nothing a snapshot would count for it
    (n0,) = ledger.available(snapshot).nodes
    assert (n0.remaining["cpu"], n0.remaining[GPU], n0.remaining["pods"]) == (8000, 1000, 110)


def test_a_pod_without_a_known_node_counts_once_it_is_bound():
    snapshot = snapshot_of([node("n0", "4")])
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], None, T0)  # e.g. admitted undecided
    assert ledger.available(snapshot) is snapshot
    ledger.reconcile(snapshot, {"pg-first": live(("uid-ml-first", "n0"))})
    assert free_cpu(ledger.available(snapshot)) == {"n0": 1000}


def test_a_pod_recreated_under_its_name_takes_up_its_slot_with_its_own_demand():
    snapshot = snapshot_of([node("n0", "4")])
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], {"ml/first": "n0"}, T0)
    ledger.reconcile(snapshot, {"pg-first": live()})  # deleted; the workload is still Inqueue
    assert free_cpu(ledger.available(snapshot)) == {"n0": 1000}  # its room is kept
    again = gpod("first", "2", uid="uid-again")  # the same name, a new uid (and shape)
    ledger.reconcile(snapshot, {"pg-first": live(again)})
    assert set(ledger.workloads["pg-first"].pods) == {"uid-again"}
    assert free_cpu(ledger.available(snapshot)) == {"n0": 2000}
    assert free_cpu(ledger.available(snapshot, without=["uid-again"])) == {"n0": 4000}


def test_a_replacement_under_another_name_takes_up_the_empty_slot():
    snapshot = snapshot_of([node("n0", "8")])
    ledger = AdmittedLedger()
    pods = [gpod("job-a", group="job"), gpod("job-b", group="job")]
    ledger.record("pg-job", pods, {"ml/job-a": "n0", "ml/job-b": "n0"}, T0)
    kept = ("uid-ml-job-b", "")
    replacement = gpod("job-x7k2", group="job")  # a Job's replacement: a generated name
    ledger.reconcile(snapshot, {"pg-job": live(kept, replacement)})
    slots = ledger.workloads["pg-job"].slots
    assert [(s.uid, s.key) for s in slots] == [
        ("uid-ml-job-x7k2", "ml/job-x7k2"),
        ("uid-ml-job-b", "ml/job-b"),
    ]
    assert free_cpu(ledger.available(snapshot)) == {"n0": 2000}
    extra = gpod("job-extra", group="job")  # more pods than it was admitted for: not counted
    ledger.reconcile(snapshot, {"pg-job": live(kept, replacement, extra)})
    assert free_cpu(ledger.available(snapshot)) == {"n0": 2000}


def test_an_empty_slot_goes_once_the_workload_runs_and_a_finished_pods_slot_at_once():
    snapshot = snapshot_of([node("n0", "16")])
    ledger = AdmittedLedger()
    pods = [gpod(f"g-{i}", group="g") for i in range(3)]
    ledger.record("pg-g", pods, {f"ml/g-{i}": "n0" for i in range(3)}, T0)
    ledger.reconcile(snapshot, {"pg-g": live(("uid-ml-g-1", ""), finished=["uid-ml-g-2"])})
    assert [s.uid for s in ledger.workloads["pg-g"].slots] == ["", "uid-ml-g-1"]
    ledger.reconcile(snapshot, {"pg-g": live(("uid-ml-g-1", ""), waiting=False)})  # Running
    assert [s.uid for s in ledger.workloads["pg-g"].slots] == ["uid-ml-g-1"]
    assert free_cpu(ledger.available(snapshot)) == {"n0": 13000}


def test_the_pods_of_a_podgroup_admitted_before_them_take_up_its_awaited_slots():
    nodes = [node("n0", "8")]
    snapshot = snapshot_of(nodes)
    ledger = AdmittedLedger()
    shapes = [("ml/job#0", {"cpu": 3000, "pods": 1}), ("ml/job#1", {"cpu": 3000, "pods": 1})]
    ledger.record("pg-job", [], {"ml/job#0": "n0", "ml/job#1": "n0"}, T0, shapes)
    assert free_cpu(ledger.available(snapshot)) == {"n0": 2000}
    first = gpod("job-0", "2", group="job", node_name="n0")
    ledger.reconcile(snapshot, {"pg-job": live(first)})
    slots = ledger.workloads["pg-job"].slots
    assert [(s.uid, s.demand["cpu"]) for s in slots] == [("uid-ml-job-0", 2000), ("", 3000)]
    assert free_cpu(ledger.available(snapshot)) == {"n0": 3000}
    newer = build_snapshot(nodes, [first], LATER)  # lists job-0 on n0: its slot goes
    ledger.reconcile(newer, {"pg-job": live(first)})
    assert [s.uid for s in ledger.workloads["pg-job"].slots] == [""]
    assert free_cpu(ledger.available(newer)) == {"n0": 3000}


def test_a_new_snapshot_replaces_the_derived_one():
    ledger = AdmittedLedger()
    ledger.record("pg-first", [gpod("first")], {"ml/first": "n0"}, T0)
    old, new = snapshot_of([node("n0", "4")]), snapshot_of([node("n0", "8")])
    assert free_cpu(ledger.available(old)) == {"n0": 1000}
    assert free_cpu(ledger.available(new)) == {"n0": 5000}


# -- the check's plugin over whole cycles -------------------------------------------------


def check_context(snapshot, ledger=None, checker=None):
    return AdmissionContext(
        checker or AdmissionChecker(), snapshot, ledger=ledger or AdmittedLedger()
    )


def cycle(scenario, ctx, now=0.0):
    config = default_config().with_action_arguments("enqueue", admissionCheck=True)
    client = RecordingClusterClient()
    report = run_cycle(scenario.cache(), config, client, now=now, admission=ctx)
    return report, client


def phases(client):
    return {c[1]: c[2].get("phase") for c in client.of("patch_podgroup_status")}


def workloads(*specs, nodes):
    """Scenario with a 100-CPU queue, ``nodes`` and one single-pod Guaranteed workload per
    (name, cpu, phase, node_name)."""
    pods, groups = [], []
    for i, (name, cpu, phase, node_name) in enumerate(specs):
        groups.append(podgroup(name, namespace="ml", queue="q", phase=phase, created=i))
        pods.append(gpod(name, cpu, group=name, queue="q", node_name=node_name, created=i))
    capability = {"cpu": "100", "memory": "100Gi"}
    return Scenario(
        nodes=nodes, pods=pods, podgroups=groups, queues=[queue("q", capability=capability)]
    )


def test_in_one_cycle_the_second_3_cpu_workload_is_held():
    nodes = [node("n0", "4")]
    ctx = check_context(snapshot_of(nodes))
    report, client = cycle(
        workloads(("first", "3", "Pending", None), ("second", "3", "Pending", None), nodes=nodes),
        ctx,
    )
    assert client.binds() == {"ml/first": "n0"}
    held = ctx.results["pg-ml-second"]
    assert not held.admit and held.reason == "InsufficientNodeCapacity"
    assert "largest free 1 CPU" in held.message
    assert set(ctx.ledger.workloads) == {"pg-ml-first"}
    # The report sees the same: "second" no longer fits today's nodes.
    risks = {r.name: r.risk for r in report.risks}
    assert risks["second"] == "fits_no_node_shape"


def test_in_a_later_cycle_the_admitted_workload_still_counts_on_its_node():
    nodes = [node("n0", "4"), node("n1", "4")]
    snapshot = snapshot_of(nodes)  # taken before anything was admitted
    ledger = AdmittedLedger()
    first = [("first", "3", "Pending", None)]
    cycle(workloads(*first, nodes=nodes), check_context(snapshot, ledger))
    assert "pg-ml-first" in ledger
    # Next cycle: first is Inqueue and bound to n1 (whatever the evaluator placed), the
    # snapshot is the same; second (4 CPU) fits only on n0, third (4 CPU) then nowhere.
    later = [
        ("first", "3", "Inqueue", "n1"),
        ("second", "4", "Pending", None),
        ("third", "4", "Pending", None),
    ]
    ctx = check_context(snapshot, ledger)
    _, client = cycle(workloads(*later, nodes=nodes), ctx, now=10.0)
    assert ledger.workloads["pg-ml-first"].pods["uid-ml-first"].node == "n1"
    assert client.binds() == {"ml/second": "n0"}
    assert ctx.results["pg-ml-second"].admit and not ctx.results["pg-ml-third"].admit


def test_a_workload_back_to_pending_is_evaluated_without_its_old_admission():
    nodes = [node("n0", "4")]
    snapshot = snapshot_of(nodes)
    ledger = AdmittedLedger()
    ledger.record("pg-ml-first", [gpod("first", group="first")], {"ml/first": "n0"}, T0)
    ctx = check_context(snapshot, ledger)
    # e.g. its PodGroup status was reset, or the cache has not seen the Inqueue patch yet
    _, client = cycle(workloads(("first", "3", "Pending", None), nodes=nodes), ctx)
    assert ctx.results["pg-ml-first"].admit
    assert client.binds() == {"ml/first": "n0"}
    assert set(ledger.workloads) == {"pg-ml-first"}  # recorded again, once


def test_an_admitted_workload_waiting_for_nodes_does_not_compete_with_itself_in_the_report():
    nodes = [node("n0", "4")]
    snapshot = snapshot_of(nodes)
    ledger = AdmittedLedger()
    ledger.record("pg-ml-big", [gpod("big", "3", group="big")], {"ml/big": "n0"}, T0)
    # "big" is Inqueue but a foreign 2-CPU pod (not in the snapshot yet) took n0.
    scenario = workloads(("big", "3", "Inqueue", None), nodes=nodes)
    scenario.pods.append(pod("other", "2", "1Gi", namespace="ml", node_name="n0", scheduler=None))
    report, _ = cycle(scenario, check_context(snapshot, ledger))
    risk = next(r for r in report.risks if r.name == "big")
    assert risk.risk == "fits_now"  # by the snapshot; not "no node" because of itself


def test_a_burstable_gpu_workload_admitted_unchecked_takes_its_gpu_from_the_next_check():
    nodes = [node("n0", "8", gpu="1")]
    common = {"namespace": "ml", "queue": "q", "gpu": "1"}
    burstable = pod("b", "1", "1Gi", limits={GPU: "1"}, group="b", created=0, **common)
    trainer = pod("t", "1", "1Gi", guaranteed=True, group="t", created=1, **common)
    scenario = Scenario(
        nodes=nodes,
        pods=[burstable, trainer],
        podgroups=[
            podgroup("b", namespace="ml", queue="q", created=0),
            podgroup("t", namespace="ml", queue="q", created=1),
        ],
        queues=[queue("q", capability={"cpu": "100", "memory": "100Gi", GPU: "8"})],
    )
    ctx = check_context(snapshot_of(nodes))
    _, client = cycle(scenario, ctx)
    assert ctx.results["pg-ml-b"].reason == "NotGuaranteed"  # admitted unchecked, as the KEP
    assert ctx.ledger.workloads["pg-ml-b"].pods["uid-ml-b"].demand == {GPU: 1000}
    held = ctx.results["pg-ml-t"]
    assert not held.admit
    assert held.message.startswith("no suitable node has 1 nvidia.com/gpu free for pod ml/t")
    assert client.binds() == {"ml/b": "n0"}
