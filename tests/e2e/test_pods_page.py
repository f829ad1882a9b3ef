"""The Pods page says what the cluster says (Part 11): a real scheduler against the simulated
cluster, each of its reports stored as the Celery task stores it, and after every cycle the
Pods page (Django's test client, every page of it) compared with the cluster's pods read from
the API: every pod of ours listed once, in the state its object implies; deleted pods gone;
a pod deleted and created again under its name listed once, as the new pod.

Seen on `make run` before: pods kubectl showed Running were "Binding" forever, deleted pods
stayed listed for the seven days of history, a gated pod's timeline was empty, and after a
restart of the stack (a new simulated cluster, the same database) rows piled up, one pod page
showing five contradictory "Now:" lines. The restart is played here too: a second simulated
cluster, its own scheduler, the same database — its pods alone are current.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from dashboard.models import PodTransition, TrackedPod
from dashboard.selectors.live import live_summary
from dashboard.tasks.history import store_cycle_report
from scheduler.api.report import TransitionKind
from tests.builders import GATE, body, pod
from tests.e2e import harness
from tests.e2e.harness import Harness

pytestmark = pytest.mark.django_db

NS = "team"
SCENARIO = {
    "kubelet": {"startupDelay": 1, "deleteCompletedPods": False},
    "namespaces": [{"name": NS}],
    "queues": [{"name": "q", "spec": {"capability": {"cpu": "6", "memory": "64Gi"}}}],
    "nodes": [
        {"namePrefix": "cpu", "count": 2, "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    ],
    "workload": [
        # Finish after 6 s: Succeeded, kept (deleteCompletedPods false), as kubectl lists them.
        {"at": 0, "name": "job", "namespace": NS, "queue": "q", "replicas": 3, "duration": 6,
         "requests": {"cpu": "1", "memory": "1Gi"}},
        # Run until deleted.
        {"at": 0, "name": "svc", "namespace": NS, "queue": "q", "replicas": 2,
         "terminationGracePeriodSeconds": 2, "requests": {"cpu": "1", "memory": "1Gi"}},
    ],
}  # fmt: skip
ROW = re.compile(r'<tr data-state="(\w+)"><td><a href="/pods/([^/]+)/([^/]+)/">')


def gated_pod(name: str) -> dict:
    """A pod as Sluice's webhook admits it: opted in, with the queue-allocation gate."""
    return body(pod(name, "1", "1Gi", namespace=NS, queue="q", gates=[GATE], opt_in=True,
                    uid=None, created=None))  # fmt: skip


class Cluster:
    """One simulated cluster, its scheduler, and the reports stored so far."""

    def __init__(self, start: float = harness.START) -> None:
        previous, harness.START = harness.START, start
        try:
            self.h = Harness(SCENARIO)
        finally:
            harness.START = previous
        self.stored = 0

    def step(self, seconds: int = 1) -> None:
        for _ in range(seconds):
            self.h.step()
            for report in self.h.reports[self.stored :]:
                store_cycle_report(report.to_json())
            self.stored = len(self.h.reports)
            check_pods_page(self.h)

    def create(self, name: str) -> None:
        self.h.core.create_namespaced_pod(NS, gated_pod(name))

    def delete(self, name: str) -> None:
        self.h.core.delete_namespaced_pod(name, NS)


@pytest.fixture
def clusters():
    """Clusters started by the test, each closed once at the end."""
    started: list[Cluster] = []
    yield started
    for c in started:
        c.h.close()


def implied(pod, just_bound: set[str]) -> set[str]:
    """The states the API's pod implies (a pod the latest cycle bound is Binding until the
    next cycle sees it bound)."""
    if pod.metadata.deletion_timestamp:
        return {"Terminating"}
    if pod.status.phase in ("Succeeded", "Failed"):
        return {pod.status.phase}
    if pod.spec.node_name:
        return {"Running", "Binding"} if pod.metadata.uid in just_bound else {"Running"}
    if pod.spec.scheduling_gates:
        return {"Gated"}
    if pod.status.nominated_node_name:
        return {"Pipelined"}
    return {"Waiting", "Unschedulable"}


def pods_page(client, state: str = "") -> list[tuple[str, str]]:
    """Every row of the Pods page (filtered by ``state``), all pages: (namespace/name, label)."""
    rows, page = [], 1
    while True:
        html = client.get(f"/pods/?state={state}&page={page}").content.decode()
        rows += [(f"{ns}/{name}", state) for state, ns, name in ROW.findall(html)]
        if 'rel="next"' not in html:
            return rows
        page += 1


def check_pods_page(h: Harness) -> None:
    from django.test import Client

    listed = pods_page(Client())
    latest = h.reports[-1]
    just_bound = {t.uid for t in latest.transitions if t.kind is TransitionKind.ALLOCATED}
    api = {
        f"{p.metadata.namespace}/{p.metadata.name}": p
        for p in h.core.list_pod_for_all_namespaces().items
        if p.spec.scheduler_name == "volcano"
    }
    counts = Counter(name for name, _ in listed)
    assert [n for n, c in counts.items() if c > 1] == [], "a pod listed twice"
    assert set(counts) == set(api), "the page and the API list different pods"
    for name, state in listed:
        assert state in implied(api[name], just_bound), (name, state, api[name].status.phase)
    # The state filter: "Running" lists the pods kubectl shows bound and not being deleted.
    running = {name for name, _ in pods_page(Client(), "running")}
    assert running == {name for name, state in listed if state == "Running"}
    assert {n for n, p in api.items() if implied(p, just_bound) == {"Running"}} <= running
    # One current state per pod of the cluster, and it is this pod's (a name re-used is a
    # new pod: the current row carries the API's UID).
    current = dict(
        TrackedPod.objects.filter(cluster=latest.cluster)
        .exclude(state="deleted")
        .values_list("uid", "name")
    )
    assert sorted(current) == sorted(p.metadata.uid for p in api.values())


def test_the_pods_page_follows_the_cluster_through_churn_and_a_new_cluster(clusters, client):
    cluster = Cluster()
    clusters.append(cluster)
    cluster.step(1)  # the jobs and services arrive and bind: 5 CPU of the queue's 6
    # A pod bound elsewhere whose object the scheduler cannot read (cpu: 1e400, which
    # kube-apiserver takes): left out of the scheduler's cache, still a pod of the cluster.
    cluster.h.core.create_namespaced_pod(NS, body(pod(
        "odd", "1e400", "1Gi", namespace=NS, queue="q", node_name="cpu-1", uid=None,
        created=None)))  # fmt: skip
    cluster.step(1)  # listed in the state the API shows (the simulated kubelet fails it)
    assert dict(pods_page(client))[f"{NS}/odd"] == "Failed"
    for i in range(4):
        cluster.create(f"nb-{i}")  # 4 CPU more: one runs, the others wait gated
    cluster.step(3)
    gated = sorted(name.split("/")[1] for name, state in pods_page(client) if state == "Gated")
    assert gated, "the queue holds no pod back"
    for name in (f"nb-{i}" for i in range(4)):  # each timeline starts at creation, gated
        uid = TrackedPod.objects.get(name=name).uid
        first = PodTransition.objects.filter(uid=uid).first()
        assert (first.kind, first.from_state, first.to_state) == ("created", "", "gated")

    cluster.delete("svc-0")  # terminating for its 2 s grace, then gone
    cluster.delete(gated[0])  # gated, never ran: gone at once
    cluster.step(4)
    cluster.h.core.create_namespaced_pod(NS, gated_pod("svc-0"))  # the name again: a new pod
    cluster.step(8)  # the jobs finish: Succeeded; the gated pods get their turn

    states = dict(pods_page(client))
    assert states[f"{NS}/job-0"] == "Succeeded"
    assert f"{NS}/{gated[0]}" not in states
    assert states[f"{NS}/svc-0"] in ("Running", "Binding", "Gated", "Waiting")
    gone = PodTransition.objects.filter(kind="deleted").values_list("name", flat=True)
    assert sorted(gone) == sorted([gated[0], "svc-0"])  # each marked gone once
    svc = client.get(f"/pods/{NS}/svc-0/").content.decode()
    assert svc.count("Now:") == 1 and "Other pods named team/svc-0" in svc
    first_cluster = cluster.h.reports[-1].cluster

    # A restart of the whole stack: a new simulated cluster (same names), the same database.
    restarted = Cluster(start=cluster.h.clock.now() + 60)
    clusters.append(restarted)
    restarted.step(3)  # every step compares the page with the new cluster's API
    assert restarted.h.reports[-1].cluster not in ("", first_cluster)
    assert live_summary().cluster == restarted.h.reports[-1].cluster
    page = client.get(f"/pods/{NS}/job-0/").content.decode()
    assert page.count("Now:") == 1 and "(another cluster)" in page
