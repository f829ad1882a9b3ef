"""Part 11's adversary: two clusters, one database.

README (A tour of the pages, History): "A simulated cluster started afresh has a new
`kube-system`, so it is a new cluster: the pages show the latest report's cluster only".
Issue 16: "The history knows which cluster it belongs to (a new simulated cluster is a new
cluster)".

Each cycle's time is the cluster's own clock (a simulated cluster runs at ``--speed``, and its
clock goes on "at the saved speed" while it is down — README, Commands). A cluster that ran
sped up is ahead of the wall clock; ``make run-fresh`` then starts a new cluster whose clock is
the wall clock, behind the times already stored. These tests play that with two simulated
clusters on virtual clocks (the harness of tests/e2e), each scheduled by a real scheduler
through the API, every report stored as the Celery task stores it, the pages read with
Django's test client.
"""

from __future__ import annotations

import re
import time

import pytest

from dashboard.selectors.live import live_summary
from dashboard.tasks.history import store_cycle_report
from tests.e2e import harness
from tests.e2e.harness import Harness

pytestmark = pytest.mark.django_db

NS = "team"


def scenario(cpu: str, replicas: int) -> dict:
    return {
        "kubelet": {"startupDelay": 1, "deleteCompletedPods": False},
        "namespaces": [{"name": NS}],
        "queues": [{"name": "q", "spec": {"capability": {"cpu": cpu, "memory": "64Gi"}}}],
        "nodes": [{"namePrefix": "cpu", "count": 2,
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}],
        "workload": [{"at": 0, "name": "svc", "namespace": NS, "queue": "q",
                      "replicas": replicas, "requests": {"cpu": "1", "memory": "1Gi"}}],
    }  # fmt: skip


class Cluster:
    def __init__(self, start: float, cpu: str, replicas: int) -> None:
        previous, harness.START = harness.START, start
        try:
            self.h = Harness(scenario(cpu, replicas))
        finally:
            harness.START = previous

    def step(self, seconds: int) -> None:
        for _ in range(seconds):
            stored = len(self.h.reports)
            self.h.step()
            for report in self.h.reports[stored:]:
                store_cycle_report(report.to_json())

    @property
    def uid(self) -> str:
        return self.h.reports[-1].cluster


@pytest.fixture
def clusters():
    started: list[Cluster] = []
    yield started
    for c in started:
        c.h.close()


ROW = re.compile(r'<tr data-state="(\w+)"><td><a href="/pods/([^/]+)/([^/]+)/">')


def test_a_new_cluster_whose_clock_is_behind_the_previous_one_is_the_one_shown(clusters, client):
    """What: cluster A ran an hour ahead of the wall clock (a sped-up simulated cluster) with
    5 pods of queue ``q``; it is replaced by cluster B (a new ``kube-system`` UID) whose clock
    is the wall clock, with 2 pods. B's reports are stored after A's.

    Promise: the pages show the latest report's cluster only.

    What happens: ``dashboard.tasks.history._store`` calls a report "latest" only when no
    stored cycle started after it (``Cycle.started_at``, the cluster's time): every report of
    B is stored as history only, the live state stays A's, and the Pods page goes on listing
    A's five pods — for as long as A's last cycle is in the future of B's clock (an hour
    here; forever for a cluster at ``--speed 60``)."""
    a = Cluster(start=harness.START + 3600, cpu="6", replicas=5)
    clusters.append(a)
    a.step(3)
    a.h.close()
    clusters.remove(a)

    b = Cluster(start=harness.START, cpu="4", replicas=2)
    clusters.append(b)
    b.step(3)
    assert b.uid and b.uid != a.uid

    assert live_summary().cluster == b.uid
    html = client.get("/pods/").content.decode()
    listed = sorted(f"{ns}/{name}" for _, ns, name in ROW.findall(html))
    api = sorted(
        f"{p.metadata.namespace}/{p.metadata.name}"
        for p in b.h.core.list_pod_for_all_namespaces().items
        if p.spec.scheduler_name == "volcano"
    )
    assert listed == api


def test_the_banner_says_a_new_cluster_s_scheduler_stopped(clusters, client, settings, tmp_path):
    """What: the same two clusters (A an hour ahead, B on the wall clock); B's scheduler runs
    3 cycles and stops; the web reads B's clock (its kubeconfig), 2 minutes later.

    Promise (README, A tour of the pages): every page's banner says "when the scheduler has
    stopped reporting (no cycle, failed or not, for 10 of the periods it reported + 30 s)".

    What happens: ``scheduler_state`` takes the latest cycle by ``started_at`` across clusters
    — A's, an hour in B's future — and its age is clamped at zero: the banner never says the
    scheduler stopped, whatever B's scheduler does."""
    from dashboard.context_processors import _state

    a = Cluster(start=harness.START + 3600, cpu="6", replicas=5)
    clusters.append(a)
    a.step(3)
    b = Cluster(start=harness.START, cpu="4", replicas=2)
    clusters.append(b)
    b.step(3)
    # The web reads the cluster's time from B's kubeconfig: 120 s after B's last cycle.
    b.h.clock.advance(120)
    clock = {"speed": 1.0, "wallTime": time.time(), "simulatedTime": b.h.clock.now()}
    kubeconfig = b.h.server.write_kubeconfig(tmp_path / "kubeconfig", clock=clock)
    settings.SLUICE_KUBECONFIG = str(kubeconfig)
    state = _state()
    assert abs(state.now.timestamp() - b.h.clock.now()) < 5, "the web reads B's clock"
    assert state.stale, f"latest cycle {state.latest_at}, now {state.now}"


def b_kubeconfig(b: Cluster, settings, tmp_path) -> None:
    """The web reads cluster B and its clock, as the kubeconfig ``make run`` writes says."""
    clock = {"speed": 1.0, "wallTime": time.time(), "simulatedTime": b.h.clock.now()}
    path = b.h.server.write_kubeconfig(tmp_path / "kubeconfig", clock=clock)
    settings.SLUICE_KUBECONFIG = str(path)
    from dashboard import kube

    kube.api_client.cache_clear()


def test_a_queue_page_shows_only_this_cluster_s_history(clusters, client, settings, tmp_path):
    """What: cluster A (queue ``q`` capped at 6 CPU, and a queue ``aonly``) runs 5 cycles and
    is replaced by cluster B (a new ``kube-system``, 60 s later by its clock: no clock games),
    where ``q`` is capped at 4 CPU and ``aonly`` does not exist. B runs 3 cycles.

    Promise: "the pages show the latest report's cluster only" (README, History); the queue
    page shows "the same figures over the last hour, day or week"; "Only a name nothing refers
    to, with no history, is a 404" (dashboard/views/queues.py); issue 16: "The history knows
    which cluster it belongs to".

    What happens: ``queue_series`` reads every ``QueueSample`` of the queue's name, whatever
    cluster stored it: ``q``'s chart and its table ("The same figures in numbers (8 samples")
    mix A's 6-CPU capability with B's 4, and ``/queues/aonly/`` — a queue cluster B never had —
    is a 200 page with A's figures instead of a 404."""
    a = Cluster(start=harness.START, cpu="6", replicas=5)
    clusters.append(a)
    a.h.custom.create_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues",
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "aonly"}, "spec": {"weight": 1}},
    )  # fmt: skip
    a.step(5)
    b = Cluster(start=a.h.clock.now() + 60, cpu="4", replicas=2)
    clusters.append(b)
    b.step(3)
    assert live_summary().cluster == b.uid
    b_kubeconfig(b, settings, tmp_path)

    page = client.get("/queues/q/?range=hour").content.decode()
    caption = re.search(r"The same figures in numbers \((\d+) samples", page)
    assert caption, "the queue page has its table of figures"
    samples = int(caption.group(1))
    aonly = client.get("/queues/aonly/").status_code
    # q's figures over the hour are cluster B's 3 cycles; aonly is no queue of cluster B.
    assert (samples, aonly) == (3, 404)
