"""One current state per pod, reconciled from each report's pods (dashboard.services.pod_states):
a timeline that starts at creation (and gating), a transition only on a real change, a pod gone
from the cluster marked deleted once, and the pods of one cluster never shown for another."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dashboard.models import PodTransition, TrackedPod
from dashboard.selectors.pods import PodFilter, find_pod, pod_list
from dashboard.tasks.history import prune_history, store_cycle_report
from scheduler.api.report import PodState, TransitionKind
from tests.builders import T0, cycle_report, pod_record, transition, waiting_pod

pytestmark = pytest.mark.django_db

CREATED = int(T0) - 30
CLUSTER = "cluster-a"


def report(at: float, **kw) -> dict:
    kw.setdefault("pods", [])
    kw.setdefault("cluster", CLUSTER)
    return cycle_report(at, **kw)


def gated(name: str = "nb-1", **kw):
    return waiting_pod(name, "research", gated=True, reason="queue research is full",
                       created=CREATED, **kw)  # fmt: skip


def timeline(uid: str = "uid-nb-1") -> list[tuple[str, str, str]]:
    return [
        (t.kind, t.from_state, t.to_state)
        for t in PodTransition.objects.filter(uid=uid).order_by("at", "id")
    ]


def listed(cluster: str = CLUSTER, **filters) -> list[tuple[str, str]]:
    page = pod_list(filters=PodFilter(**filters), cluster=cluster)
    return [(f"{p.namespace}/{p.name}", p.state.value) for p in page.object_list]


def test_a_gated_pods_timeline_starts_at_its_creation_and_gating():
    store_cycle_report(report(T0, waiting=[gated()]))

    created = PodTransition.objects.get()
    assert (created.kind, created.from_state, created.to_state) == ("created", "", "gated")
    assert created.at == datetime.fromtimestamp(CREATED, tz=UTC)
    assert created.message == "created with a scheduling gate"
    pod = TrackedPod.objects.get()
    assert (pod.state, pod.cluster, pod.since) == ("gated", CLUSTER, created.at)


def test_a_pods_life_as_the_cluster_shows_it_one_row_and_one_transition_per_change():
    bound = transition("nb-1", TransitionKind.ALLOCATED, "cpu-1", "allocated",
                       old=PodState.WAITING)  # fmt: skip
    lifted = transition("nb-1", TransitionKind.GATE_REMOVED, reason="queue has capacity",
                        old=PodState.GATED)  # fmt: skip
    record = lambda state: pod_record("nb-1", state, node="cpu-1", created=CREATED)  # noqa: E731
    reports = [
        report(T0, waiting=[gated()]),
        report(T0 + 1, transitions=[lifted, bound], pods=[record(PodState.BINDING)]),
        report(T0 + 2, pods=[record(PodState.BINDING)]),  # not seen bound yet: no change
        report(T0 + 3, pods=[record(PodState.RUNNING)]),
        report(T0 + 4, pods=[record(PodState.RUNNING)]),
        report(T0 + 5, pods=[record(PodState.SUCCEEDED)]),
        report(T0 + 6),  # gone from the cluster
        report(T0 + 7),
    ]
    states = []
    for r in reports:
        store_cycle_report(r)
        states.append(listed()[0][1] if listed() else None)

    assert states == ["gated", "binding", "binding", "running", "running", "succeeded", None, None]
    assert timeline() == [
        ("created", "", "gated"),
        ("gate_removed", "gated", "waiting"),
        ("allocated", "waiting", "binding"),
        ("observed", "binding", "running"),
        ("observed", "running", "succeeded"),
        ("deleted", "succeeded", "deleted"),
    ]
    assert PodTransition.objects.get(kind="observed", to_state="running").message == (
        "bound to cpu-1"
    )
    pod = TrackedPod.objects.get()
    assert (pod.state, pod.message) == ("deleted", "gone from the cluster")
    assert listed(state="deleted") == [("research/nb-1", "deleted")]


def test_why_a_pending_pod_waits_changes_its_row_not_its_history():
    waiting = waiting_pod("nb-1", "research", state=PodState.WAITING, reason="gang",
                          created=CREATED)  # fmt: skip
    short = waiting_pod("nb-1", "research", reason="0/3 nodes", created=CREATED)

    for at, pod in enumerate([waiting, short, waiting, short]):
        store_cycle_report(report(T0 + at, waiting=[pod]))

    assert timeline() == [("created", "", "waiting")]
    assert TrackedPod.objects.get().state == "unschedulable"


def test_a_decision_that_changes_nothing_is_no_history_but_a_failed_bind_is():
    store_cycle_report(report(T0, pods=[pod_record("etl-7", PodState.TERMINATING, node="cpu-3")]))
    again = transition("etl-7", TransitionKind.EVICTED, "cpu-3", "reclaimed",
                       old=PodState.TERMINATING)  # fmt: skip
    failed = transition("nb-2", TransitionKind.BIND_FAILED, "cpu-1", "bind failed: conflict",
                        new=PodState.WAITING)  # fmt: skip

    store_cycle_report(report(T0 + 1, transitions=[again, failed],
                              pods=[pod_record("etl-7", PodState.TERMINATING, node="cpu-3")],
                              waiting=[waiting_pod("nb-2", "research", reason="x")]))  # fmt: skip

    assert list(PodTransition.objects.values_list("kind", "from_state", "to_state")) == [
        ("bind_failed", "waiting", "waiting")
    ]


def test_a_pod_first_seen_running_gets_its_creation_then_what_was_seen():
    store_cycle_report(report(T0, pods=[pod_record("nb-1", node="cpu-2", created=CREATED)]))

    assert timeline() == [("created", "", "waiting"), ("observed", "waiting", "running")]
    assert TrackedPod.objects.get().state == "running"


def test_observe_mode_decisions_do_not_move_a_pod_the_cluster_did_not_move():
    lifted = transition("nb-1", TransitionKind.GATE_REMOVED, old=PodState.GATED)
    allocated = transition("nb-1", TransitionKind.ALLOCATED, "cpu-1")
    store_cycle_report(report(T0, mode="observe", waiting=[gated()]))
    # The scheduler would lift the gate and bind: the pod, still gated in the cluster, is
    # pending in the inventory (and waiting, as the session would have it, elsewhere).
    store_cycle_report(report(T0 + 1, mode="observe", transitions=[lifted, allocated],
                              pods=[pod_record("nb-1", PodState.GATED, created=CREATED)]))  # fmt: skip
    store_cycle_report(report(T0 + 2, mode="observe", waiting=[
        waiting_pod("nb-1", "research", state=PodState.WAITING, reason="x", created=CREATED)]))  # fmt: skip

    assert timeline() == [
        ("created", "", "gated"),
        ("gate_removed", "gated", "waiting"),  # what it would do, recorded once
        ("allocated", "waiting", "binding"),
    ]
    assert TrackedPod.objects.get().state == "waiting"  # never "binding"


def test_a_new_cluster_does_not_inherit_the_old_ones_pods():
    old = [pod_record("nb-1", created=CREATED, uid="old-1"), pod_record("etl-0", uid="old-2")]
    store_cycle_report(report(T0, pods=old))
    store_cycle_report(report(T0 + 60, cluster="cluster-b",
                              waiting=[gated(uid="new-1")]))  # fmt: skip

    assert listed("cluster-b") == [("research/nb-1", "gated")]
    assert listed(CLUSTER) == [("research/etl-0", "running"), ("research/nb-1", "running")]
    # The old cluster's pods are not marked gone: that cluster said nothing of them.
    assert not PodTransition.objects.filter(kind="deleted").exists()
    detail = find_pod(namespace="research", name="nb-1", cluster="cluster-b")
    assert (detail.pod.uid, detail.current) == ("new-1", True)
    assert [p.uid for p in detail.others] == ["old-1"]
    assert [t.uid for t in detail.timeline] == ["new-1"]
    earlier = find_pod(namespace="research", name="nb-1", cluster="cluster-b", uid="old-1")
    assert (earlier.pod.uid, earlier.current) == ("old-1", False)


def test_a_pod_deleted_and_created_again_under_its_name_is_a_new_pod():
    store_cycle_report(report(T0, pods=[pod_record("web-0", uid="first", created=CREATED)]))
    store_cycle_report(report(T0 + 1))
    store_cycle_report(report(T0 + 2, waiting=[waiting_pod("web-0", "research", reason="x",
                                                           uid="second", created=int(T0) + 2)]))  # fmt: skip

    assert listed() == [("research/web-0", "unschedulable")]
    detail = find_pod(namespace="research", name="web-0", cluster=CLUSTER)
    assert detail.pod.uid == "second" and [p.uid for p in detail.others] == ["first"]
    assert [(t.kind, t.to_state) for t in detail.timeline] == [("created", "waiting")]


def test_the_same_pod_under_a_cluster_identity_learnt_late_keeps_its_history():
    store_cycle_report(report(T0, cluster="", pods=[pod_record("nb-1", created=CREATED)]))
    store_cycle_report(report(T0 + 1, pods=[pod_record("nb-1", created=CREATED)]))

    assert listed() == [("research/nb-1", "running")]
    assert timeline() == [("created", "", "waiting"), ("observed", "waiting", "running")]


def test_a_report_without_the_pods_inventory_marks_nothing_gone():
    store_cycle_report(report(T0, waiting=[gated()]))
    store_cycle_report(report(T0 + 1, pods=None))

    assert listed() == [("research/nb-1", "gated")]
    assert not PodTransition.objects.filter(kind="deleted").exists()


def test_a_late_report_changes_no_current_state():
    store_cycle_report(report(T0 + 5, pods=[pod_record("nb-1", node="cpu-1", created=CREATED)]))
    store_cycle_report(report(T0, waiting=[gated()]))

    assert listed() == [("research/nb-1", "running")]


def test_prune_keeps_the_pods_that_exist_and_forgets_the_gone_and_other_clusters(settings):
    settings.SLUICE_HISTORY_RETENTION_DAYS = 7
    day = 86400
    store_cycle_report(report(T0 - 20 * day, cluster="old", pods=[pod_record("x", uid="x")]))
    store_cycle_report(report(T0 - 10 * day, pods=[pod_record("old-runner", created=CREATED),
                                                   pod_record("gone")]))  # fmt: skip
    store_cycle_report(report(T0 - 9 * day, pods=[pod_record("old-runner", created=CREATED)]))

    deleted = prune_history(now=T0)

    assert deleted["pods"] == 2  # x (another cluster), gone (deleted 9 days ago)
    assert listed() == [("research/old-runner", "running")]


def test_a_pods_facts_are_kept_from_the_first_report_that_carries_them():
    """CycleReport.pod_facts (what the what-if lab replays): stored with the pod's row; a row
    made by a report without them (an older scheduler) takes them from a later report (a
    scheduler that restarted reports every pod again); once kept, never replaced."""
    facts = {"requests": {"cpu": 1000}, "group": "", "minMember": 1, "priorityClassName": "",
             "priority": 0, "groupPriorityClassName": "", "groupPriority": 0}  # fmt: skip
    store_cycle_report(report(T0, waiting=[gated("nb-1"), gated("nb-2")],
                              ) | {"pod_facts": {"uid-nb-1": facts}})  # fmt: skip
    rows = dict(TrackedPod.objects.values_list("uid", "facts"))
    assert rows == {"uid-nb-1": facts, "uid-nb-2": None}

    later = {**facts, "requests": {"cpu": 2000}}
    store_cycle_report(report(T0 + 1, waiting=[gated("nb-1"), gated("nb-2")])
                       | {"pod_facts": {"uid-nb-1": later, "uid-nb-2": later}})  # fmt: skip
    rows = dict(TrackedPod.objects.values_list("uid", "facts"))
    assert rows == {"uid-nb-1": facts, "uid-nb-2": later}
